package client

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/apollo11/apollo11/internal/backoff"
)

// Reconnect says how a Client connects again after losing its
// connection. The zero value reconnects with the default delays, for as
// long as the Client is open.
type Reconnect struct {
	// Off turns reconnecting off. Once the connection is lost, pending
	// and later calls fail with ErrConnectionLost. Dial again to go on.
	Off bool
	// MinDelay and MaxDelay bound the wait before each attempt. It
	// doubles from MinDelay up to MaxDelay, each drawn at random from
	// its upper half. The defaults are 100 ms and 5 s.
	MinDelay, MaxDelay time.Duration
	// GiveUpAfter ends the Client, as Off would have, once it has been
	// without a connection this long. 0 means never. Each call is still
	// bounded by its context.
	GiveUpAfter time.Duration
}

// Default reconnect delays.
const (
	DefaultReconnectMin = 100 * time.Millisecond
	DefaultReconnectMax = 5 * time.Second
)

// withDefaults fills the zero delays and checks the others.
func (r Reconnect) withDefaults() (Reconnect, error) {
	if r.MinDelay < 0 || r.MaxDelay < 0 || r.GiveUpAfter < 0 {
		return r, errors.New("client: negative Reconnect delay")
	}
	if r.MinDelay == 0 {
		r.MinDelay = DefaultReconnectMin
	}
	if r.MaxDelay == 0 {
		r.MaxDelay = max(DefaultReconnectMax, r.MinDelay)
	}
	if r.MaxDelay < r.MinDelay {
		return r, fmt.Errorf("client: Reconnect.MaxDelay %v is below MinDelay %v", r.MaxDelay, r.MinDelay)
	}
	return r, nil
}

// lost handles the end of session s. Requests that may be sent again wait
// for the next connection, with those a follower refused. The others fail
// now, with ErrOutcomeUnknown for those that may have acted. Then
// reconnecting starts. Without reconnect, the client ends.
func (c *Client) lost(s *session, cause error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return // closed
	}
	switch s {
	case c.sess:
		c.sess = nil
		c.up = make(chan struct{})
	case c.draining:
		// bounce made new calls wait already.
		c.draining = nil
		s.grace.Stop()
		cause = s.drainEnd(cause)
	default:
		return // lost already by the other goroutine
	}
	err := fmt.Errorf("%w: %w", ErrConnectionLost, cause)
	c.down = err
	c.log.Warn("connection to the main control lost", "addr", s.addr, "err", cause, "reconnect", !c.opts.Reconnect.Off)
	if c.opts.Reconnect.Off {
		c.endLocked(err)
		return
	}
	for req, cl := range c.pending {
		if cl.resend == nil && cl.refused == nil {
			delete(c.pending, req)
			cl.deliver(reply{err: cl.lostErr(err)})
		}
	}
	c.loops.Add(1)
	go c.reconnect(err)
}

// reconnect dials until a connection is made, the client is closed or
// GiveUpAfter has passed. It waits a backoff with jitter between attempts.
// Each attempt is one pass over the addresses, from the leader a
// not_leader named, else from the one after the latest connection's. A
// named leader is dialled at once, unless one was less than MaxDelay ago:
// two stale followers could name each other.
func (c *Client) reconnect(cause error) {
	defer c.loops.Done()
	rc := c.opts.Reconnect
	c.mu.Lock()
	first, hop := c.addrs.After(c.at), false
	if c.hint != "" {
		first, c.hint = c.hint, ""
		if hop = time.Since(c.hopped) > rc.MaxDelay; hop {
			c.hopped = time.Now()
		}
	}
	c.mu.Unlock()
	bo := backoff.Backoff{Min: rc.MinDelay, Max: rc.MaxDelay}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { // Close ends a dial under way
		select {
		case <-c.ended:
			cancel()
		case <-ctx.Done():
		}
	}()
	since := time.Now()
	lastErr := ""
	for attempt := 1; ; attempt++ {
		delay := bo.Next()
		if attempt == 1 && hop {
			delay = 0
		}
		if rc.GiveUpAfter > 0 && time.Since(since)+delay > rc.GiveUpAfter {
			c.mu.Lock()
			if c.err == nil {
				c.log.Warn("giving up reconnecting", "after", time.Since(since).Round(time.Millisecond), "attempts", attempt-1)
				c.endLocked(fmt.Errorf("%w (no connection for %v: gave up reconnecting)", cause, rc.GiveUpAfter))
			}
			c.mu.Unlock()
			return
		}
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-c.ended:
			t.Stop()
			return
		}
		dctx, dcancel := ctx, context.CancelFunc(func() {})
		if rc.GiveUpAfter > 0 {
			// An attempt under way does not outlive the give-up time.
			dctx, dcancel = context.WithDeadline(ctx, since.Add(rc.GiveUpAfter))
		}
		s, err := c.pass(dctx, first)
		dcancel()
		if err != nil {
			if msg := err.Error(); msg != lastErr {
				// A refusal, such as a wrong token, says more than a refused
				// dial. Log each new reason once, not every attempt.
				c.log.Warn("cannot reconnect yet", "err", err, "attempt", attempt)
				lastErr = msg
			}
			first = c.addrs.After(first)
			continue
		}
		if !c.adopt(s) {
			s.conn.Close()
			return
		}
		c.log.Info("reconnected to the main control", "addr", s.addr, "attempts", attempt, "after", time.Since(since).Round(time.Millisecond))
		return
	}
}

// adopt makes s the client's connection. It sends again the requests
// still waiting from the lost one, in their original order, with those a
// follower refused. It returns false when the client ended meanwhile.
func (c *Client) adopt(s *session) bool {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return false
	}
	c.sess, c.features, c.admin, c.at = s, s.features, s.admin, s.addr
	type resend struct {
		req     string
		cl      *call
		frame   []byte
		refused error
	}
	var again []resend
	for req, cl := range c.pending {
		r := resend{req, cl, cl.resend, cl.refused}
		if cl.refused != nil {
			// Sent once more. Lost again, it is as unsafe as before.
			r.frame, cl.refused = cl.frame, nil
		}
		again = append(again, r)
	}
	slices.SortFunc(again, func(a, b resend) int { return cmp.Compare(a.cl.seq, b.cl.seq) })
	close(c.up)
	c.mu.Unlock()
	go s.readLoop()
	for _, r := range again {
		if err := s.fits(r.frame); err != nil {
			// The new main control takes smaller frames than the old.
			c.forget(r.req)
			err = fmt.Errorf("cannot send again after reconnecting: %w", err)
			if r.refused != nil {
				err = fmt.Errorf("not applied (%w), and %w", r.refused, err)
			}
			r.cl.deliver(reply{err: err})
			continue
		}
		_ = s.write(r.frame, true) // a failed write ends s, and these wait for the next one
	}
	return true
}
