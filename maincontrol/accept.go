package maincontrol

import (
	"errors"
	"log/slog"
	"net"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The main port's listener is the server's, not gnet's. gnet's acceptor
// ends its whole engine when accept fails for any reason but a reset. So
// one moment without a free file descriptor (EMFILE, ENFILE) would stop
// the state authority. gnet also takes every connection waiting in the
// backlog at once, each with a descriptor, before --max-conns refuses
// any. acceptor hands connections to the event loops of a gnet Client,
// which listens on nothing. At most maxHandOvers are under way. A
// hand-over lasts until the loop has opened the connection, or refused
// and closed it. So the main port holds at most --max-conns descriptors,
// plus two per hand-over for the connection and gnet's duplicate. When
// accept fails it waits and tries again. A kernel out of descriptors for
// a moment is no reason to stop.

const (
	// maxHandOvers bounds the connections accepted but not yet opened
	// by an event loop. More than one: a loop busy with a long round
	// opens all those waiting at its next, and one at a time a
	// reconnecting fleet would take a round per executor.
	maxHandOvers = 16
	// Backoff after a failed accept: from acceptBackoffMin doubling to
	// acceptBackoffMax, as net/http's server does.
	acceptBackoffMin = 5 * time.Millisecond
	acceptBackoffMax = time.Second
	// acceptLogEvery spaces the log lines of a failing accept: a flood
	// against a full descriptor table would otherwise write one line per
	// attempt.
	acceptLogEvery = 10 * time.Second
)

// acceptor accepts connections on ln and hands each to handOver until ln
// is closed.
type acceptor struct {
	ln  net.Listener
	log *slog.Logger
	// handOver gives the connection to an event loop and returns once it
	// has been opened there, or an error; it owns c either way.
	handOver func(c net.Conn) error
	slots    chan struct{}  // one per hand-over under way
	handing  sync.WaitGroup // hand-overs under way
	stop     chan struct{}  // closed by abandon: a backoff waits no more
	done     chan struct{}  // closed when run returns

	mu      sync.Mutex
	failed  int       // failures since the last line logged
	lastLog time.Time // of the last failure logged
}

func newAcceptor(ln net.Listener, log *slog.Logger, handOver func(net.Conn) error) *acceptor {
	return &acceptor{ln: ln, log: log, handOver: handOver, slots: make(chan struct{}, maxHandOvers),
		stop: make(chan struct{}), done: make(chan struct{})}
}

// run accepts until the listener is closed.
func (a *acceptor) run() {
	defer close(a.done)
	var delay time.Duration
	for {
		select {
		case a.slots <- struct{}{}:
		case <-a.stop:
			return
		}
		c, err := a.ln.Accept()
		if err == nil {
			delay = 0
			a.handing.Add(1)
			go a.give(c)
			continue
		}
		<-a.slots
		if a.stopped() || errors.Is(err, net.ErrClosed) {
			return
		}
		delay = min(max(2*delay, acceptBackoffMin), acceptBackoffMax)
		a.noteFailure(err, delay)
		select {
		case <-a.stop:
			return
		case <-time.After(delay):
		}
	}
}

// give hands c over and frees its slot. A failed hand-over has closed c,
// for example when gnet could not duplicate the descriptor. The next
// accept meets the same shortage and backs off.
func (a *acceptor) give(c net.Conn) {
	defer a.handing.Done()
	if err := a.handOver(c); err != nil && !a.stopped() {
		a.noteFailure(err, -1)
	}
	<-a.slots
}

func (a *acceptor) stopped() bool {
	select {
	case <-a.stop:
		return true
	default:
		return false
	}
}

// noteFailure logs a failed accept with the backoff before the next, or a
// failed hand-over (delay < 0). It logs at most once per acceptLogEvery.
func (a *acceptor) noteFailure(err error, delay time.Duration) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.failed++
	now := time.Now()
	if !a.lastLog.IsZero() && now.Sub(a.lastLog) < acceptLogEvery {
		return
	}
	what, attrs := "cannot accept a connection", []any{"err", err, "retry_in", delay, "failures", a.failed}
	if delay < 0 { // accepted, but not handed to an event loop: it is closed
		what, attrs = "cannot hand a connection to an event loop: it was closed", []any{"err", err, "failures", a.failed}
	}
	msg := what + ": trying again"
	if descriptorsExhausted(err) {
		msg = what + ": out of file descriptors; raise the open-file limit (ulimit -n, LimitNOFILE=) or lower --max-conns"
	}
	a.log.Warn(msg, attrs...)
	a.failed, a.lastLog = 0, now
}

// close stops accepting. It waits at most grace for run and the hand-overs
// under way to end. A hand-over ends when its event loop has opened the
// connection, which a dead loop never does. It reports whether they ended.
func (a *acceptor) close(grace time.Duration) bool {
	a.abandon()
	ended := make(chan struct{})
	go func() {
		<-a.done
		a.handing.Wait()
		close(ended)
	}()
	select {
	case <-ended:
		return true
	case <-time.After(grace):
		return false
	}
}

// abandon stops accepting without waiting. With an event loop gone, a
// hand-over to it never returns.
func (a *acceptor) abandon() {
	select {
	case <-a.stop:
	default:
		close(a.stop)
	}
	_ = a.ln.Close()
}

func descriptorsExhausted(err error) bool {
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE)
}

// handOver gives c to one of gnet's event loops, which duplicates its
// descriptor, closes c and calls OnOpen before it returns.
func (s *Server) handOver(c net.Conn) error {
	_, err := s.loops.Enroll(c)
	return err
}

// listen opens the main port at --listen. That is host:port, perhaps after
// tcp://, tcp4:// or tcp6://.
func listen(addr string) (net.Listener, error) {
	network := "tcp"
	if scheme, rest, ok := strings.Cut(addr, "://"); ok {
		network, addr = scheme, rest
	}
	return net.Listen(network, addr)
}
