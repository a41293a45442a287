package client

import (
	"fmt"
	"io"
	"time"
)

// bounceGrace bounds how long a member that refused a request is read on
// for the replies to the requests sent before the refusal. A follower
// answers at once, so it only bounds a member that does not answer.
var bounceGrace = 5 * time.Second

// bounce handles a not_leader reply to req on s. The refused request
// changed nothing, so it waits for the leader. A member answers each
// request by the role it has when the request arrives, so it may have
// served some sent before the refusal. s is read on until those are
// answered (see drainedLocked), while new requests wait for the next
// connection. The leader s names, when in the list, is dialled first.
// It reports whether s is now to be left.
func (c *Client) bounce(s *session, req string, refusal *Error, hint string) (left bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return false
	}
	if c.sess == s { // the first refusal on s
		c.sess, c.draining = nil, s
		s.refusal = fmt.Errorf("%s is not the leader: %w", s.addr, refusal)
		c.up, c.down = make(chan struct{}), fmt.Errorf("%w: %w", ErrConnectionLost, s.refusal)
		c.hint = ""
		if c.follow(s.addr, hint) {
			c.hint = hint
		}
		// Every pending call was sent on s: no call starts on a session
		// that is not c.sess.
		s.waiting = make(map[string]struct{}, len(c.pending))
		for r, cl := range c.pending {
			if cl.refused == nil && !cl.answered {
				s.waiting[r] = struct{}{}
			}
		}
		s.grace = time.AfterFunc(bounceGrace, func() {
			c.mu.Lock()
			s.expired = true
			c.mu.Unlock()
			s.conn.Close() // the reader then reports the end
		})
	}
	if c.draining != s {
		return false
	}
	if cl := c.pending[req]; cl != nil {
		cl.refused = fmt.Errorf("%s refused it: %w", s.addr, refusal)
	}
	delete(s.waiting, req)
	return c.drainedLocked(s)
}

// answeredLocked notes that req, sent before a refusal, needs no more
// waiting for. It runs with c.mu held.
func (c *Client) answeredLocked(req string) {
	if c.draining != nil {
		delete(c.draining.waiting, req)
	}
}

// forgotLocked is answeredLocked for a call whose caller gave up, or whose
// request was not sent. No reply may come to end the wait, so the
// connection is left when it was the last: forgotLocked returns it, and
// the caller closes it once c.mu is released, since a TLS close may wait
// to write. It runs with c.mu held.
func (c *Client) forgotLocked(req string) io.Closer {
	c.answeredLocked(req)
	if s := c.draining; s != nil && c.drainedLocked(s) {
		s.settled = true
		return s.conn // the reader then reports the end
	}
	return nil
}

// drainedLocked reports whether s is a refusing member's connection whose
// requests sent before the refusal are all answered. It is then left. It
// runs with c.mu held.
func (c *Client) drainedLocked(s *session) bool {
	return c.draining == s && len(s.waiting) == 0
}

// drainEnd is why the connection s, left after a refusal, ended: cause is
// nil once every request sent before the refusal was answered. It runs
// with c.mu held.
func (s *session) drainEnd(cause error) error {
	switch {
	case s.settled:
		return s.refusal
	case s.expired:
		return fmt.Errorf("%w; no reply within %v to the requests sent before the refusal", s.refusal, bounceGrace)
	case cause != nil:
		return fmt.Errorf("%w; then: %w", s.refusal, cause)
	}
	return s.refusal
}
