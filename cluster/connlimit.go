package cluster

import (
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// maxPool is the connections raft's transport pools per peer it dials.
const maxPool = 3

// DefaultMaxConns caps the raft connections a member holds accepted at
// once. A peer holds maxPool pooled ones, and one more while its RPCs
// overlap: four. Eight peers, a cluster of nine, need 32; twice that
// leaves room for connections being replaced. More are closed as soon as
// accepted.
const DefaultMaxConns = 2 * 8 * (maxPool + 1)

// TransportFDs is the file descriptors a member's raft transport may
// hold: DefaultMaxConns accepted and as many dialled to its peers. The
// main control keeps them out of its main port's budget.
const TransportFDs = 2 * DefaultMaxConns

// capListener closes a connection accepted beyond its cap at once, so
// anyone reaching the raft port cannot take all the process's fds.
type capListener struct {
	net.Listener
	slots    chan struct{}
	log      *slog.Logger
	lastWarn atomic.Int64 // unix nanoseconds of the last refusal logged
}

func newCapListener(ln net.Listener, max int, log *slog.Logger) *capListener {
	if max <= 0 {
		max = DefaultMaxConns
	}
	if log == nil {
		log = slog.Default()
	}
	return &capListener{Listener: ln, slots: make(chan struct{}, max), log: log}
}

func (l *capListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		select {
		case l.slots <- struct{}{}:
			return &capConn{Conn: c, slots: l.slots}, nil
		default:
		}
		_ = c.Close()
		// One line a minute: a flood must not flood the log too.
		now := time.Now().UnixNano()
		if last := l.lastWarn.Load(); now-last > int64(time.Minute) && l.lastWarn.CompareAndSwap(last, now) {
			l.log.Warn("raft connection refused: too many open", "from", c.RemoteAddr().String(), "max", cap(l.slots))
		}
	}
}

// capConn gives its slot back when closed, once however often closed.
type capConn struct {
	net.Conn
	slots chan struct{}
	once  sync.Once
}

func (c *capConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { <-c.slots })
	return err
}
