package client

import (
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/apollo11/apollo11/wire"
)

// session is one connection of a Client, from its `hello_ok` to its end.
type session struct {
	c        *Client
	addr     string // the address dialled, one of the client's list
	conn     net.Conn
	r        *wire.Reader
	maxFrame int
	done     chan struct{} // closed when the reader goroutine exits
	features []string      // the welcome's optional groups (section 8.1)
	admin    bool          // hello_ok said admin=true (section 8.2)
	follower bool          // hello_ok said a role that refuses requests (section 8.13)
	role     string        // the role hello_ok said
	leader   string        // the leader hello_ok named, if any

	// Set once a follower refused a request on this connection (see
	// bounce), under c.mu.
	refusal error               // why the connection is left
	waiting map[string]struct{} // requests sent before it, unanswered
	grace   *time.Timer         // leaves it anyway after bounceGrace
	expired bool                // grace ran out
	settled bool                // no request sent before it waits any more

	wmu       sync.Mutex
	wbuf      []byte // frames waiting to be written
	wspare    []byte
	writing   bool // the writer goroutine runs
	maxUnsent int  // see write
}

// readLoop routes replies until the connection fails, then hands the
// loss to the client.
func (s *session) readLoop() {
	defer close(s.done)
	var last *Error // an `error` without req, usually just before a close
	for {
		m, err := s.r.Next()
		if err != nil {
			if last != nil {
				err = fmt.Errorf("%w (after %w)", err, last)
			}
			if refusal, ok := wire.Refusal(err); ok {
				// Every peer answers a frame it cannot decode before it
				// closes (spec sections 1 and 2).
				s.writeLast(refusal)
			}
			s.conn.Close()
			s.c.lost(s, err)
			return
		}
		req, ok := m.Get("req")
		if !ok {
			if m.Kind() == wire.KindError {
				last = wire.ErrorReplyOf(m)
				s.c.log.Warn("error from the main control", "code", last.Code, "message", last.Message)
			} else {
				s.c.log.Debug("ignoring frame without req", "type", m.Type())
			}
			continue
		}
		var left bool
		if m.Kind() == wire.KindError && m.Value("code") == string(wire.CodeNotLeader) && !s.c.opts.Reconnect.Off {
			left = s.c.bounce(s, strings.Clone(req), wire.ErrorReplyOf(m), strings.Clone(m.Value("leader")))
		} else {
			left = s.c.route(s, req, m)
		}
		if left {
			s.conn.Close()
			s.c.lost(s, nil)
			return
		}
	}
}

// write queues a frame for the writer goroutine, starting it when none
// runs. The caller never writes itself. A main control that stops reading
// would hold it in the socket write, past its context's deadline. What a
// peer leaves unread is bounded by maxUnsent. A call beyond it fails at
// once instead of growing the queue, unless force is set. force is for
// frames sent again after a reconnect, whose callers wait already.
func (s *session) write(frame []byte, force bool) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if !force && len(s.wbuf) > 0 && len(s.wbuf)+len(frame) > s.maxUnsent {
		return fmt.Errorf("%w: %d bytes of requests not taken yet", ErrNotReading, len(s.wbuf))
	}
	s.wbuf = append(s.wbuf, frame...)
	if !s.writing {
		s.writing = true
		go s.flush()
	}
	return nil
}

// writeLast queues a last frame and waits, up to wire.RefusalWait, until
// the writer goroutine has written it. The connection is closed next.
func (s *session) writeLast(frame []byte) {
	deadline := time.Now().Add(wire.RefusalWait)
	_ = s.conn.SetWriteDeadline(deadline)
	if s.write(frame, false) != nil {
		return
	}
	for time.Now().Before(deadline) {
		s.wmu.Lock()
		idle := !s.writing
		s.wmu.Unlock()
		if idle {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// flush writes queued frames until none is left. A failed write ends the
// session, as a failed read does.
func (s *session) flush() {
	s.wmu.Lock()
	var err error
	for len(s.wbuf) > 0 && err == nil {
		b := s.wbuf
		s.wbuf = s.wspare[:0]
		s.wmu.Unlock()
		_, err = s.conn.Write(b)
		s.wmu.Lock()
		s.wspare = b[:0]
	}
	if err != nil {
		s.wbuf = nil
	}
	s.writing = false
	s.wmu.Unlock()
	if err != nil {
		s.conn.Close() // the reader then fails too, and reports the loss
		s.c.lost(s, err)
	}
}
