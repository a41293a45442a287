package maincontrol

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// httpFreshGrace is how long a new connection keeps its slot before its
// first request's headers are read. A probe sends them at once, but on a
// busy host the goroutine reading them may start late. A newcomer that
// closed it then would reset the probe. Silent peers hold a slot this long.
const httpFreshGrace = 500 * time.Millisecond

// limitListener serves at most max connections at once. At the cap a
// newcomer takes the place of the connection that has waited longest
// without a request under way. Such a connection is idle between
// keep-alive requests, or has not sent its first request's headers within
// grace. Otherwise a handful of idle keep-alive clients would lock every
// health probe out until their idle timeout. When no connection may give
// way, Accept waits. It waits at most grace for a fresh connection, or
// until requests end within the server's timeouts.
type limitListener struct {
	net.Listener
	max       int
	grace     time.Duration // a fresh connection is not closed for a newcomer before
	done      chan struct{} // closed by Close: a full listener stops waiting
	closeOnce sync.Once

	mu      sync.Mutex
	open    map[*limitedConn]struct{}
	changed chan struct{} // closed and replaced when a slot may have freed
}

func newLimitListener(ln net.Listener, n int, grace time.Duration) *limitListener {
	return &limitListener{Listener: ln, max: n, grace: grace, done: make(chan struct{}),
		open: make(map[*limitedConn]struct{}, n), changed: make(chan struct{})}
}

// Accept waits until a slot is free or some connection could give up its
// own. It accepts, then takes a slot, closing the longest-waiting idle
// connection if that is what frees one. It holds at most one connection
// beyond the cap, the one accepted while the others finish requests.
func (l *limitListener) Accept() (net.Conn, error) {
	if err := l.waitRoom(); err != nil {
		return nil, err
	}
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	lc := &limitedConn{Conn: c, l: l, state: http.StateNew, since: time.Now()}
	for {
		l.mu.Lock()
		if len(l.open) < l.max {
			l.open[lc] = struct{}{}
			l.mu.Unlock()
			return lc, nil
		}
		victim, ripe := l.evictableLocked(time.Now())
		wait := l.changed
		l.mu.Unlock()
		if victim != nil {
			_ = victim.Close() // frees its slot before Close returns
			continue
		}
		if err := l.sleep(wait, ripe); err != nil {
			_ = c.Close()
			return nil, err
		}
	}
}

// waitRoom returns once a connection could be taken in.
func (l *limitListener) waitRoom() error {
	for {
		l.mu.Lock()
		victim, ripe := l.evictableLocked(time.Now())
		room := len(l.open) < l.max || victim != nil
		wait := l.changed
		l.mu.Unlock()
		if room {
			return nil
		}
		if err := l.sleep(wait, ripe); err != nil {
			return err
		}
	}
}

// sleep waits until a slot may have freed, or until ripe, when a fresh
// connection's grace ends. A zero ripe means no such connection.
func (l *limitListener) sleep(changed <-chan struct{}, ripe time.Time) error {
	var timeout <-chan time.Time
	if !ripe.IsZero() {
		t := time.NewTimer(time.Until(ripe))
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-changed:
	case <-timeout:
	case <-l.done:
		return net.ErrClosed
	}
	return nil
}

// evictableLocked returns the connection to close for a newcomer. That is
// the one idle longest, else the one longest in its first request's
// headers if its grace is over. Without one, ripe is when the next grace
// ends, or zero when no connection is fresh. Every other connection is
// mid-request.
func (l *limitListener) evictableLocked(now time.Time) (victim *limitedConn, ripe time.Time) {
	var idle, fresh *limitedConn
	for c := range l.open {
		switch c.state {
		case http.StateIdle:
			if idle == nil || c.since.Before(idle.since) {
				idle = c
			}
		case http.StateNew:
			if fresh == nil || c.since.Before(fresh.since) {
				fresh = c
			}
		}
	}
	switch {
	case idle != nil:
		return idle, time.Time{}
	case fresh == nil:
		return nil, time.Time{}
	case now.Sub(fresh.since) >= l.grace:
		return fresh, time.Time{}
	}
	return nil, fresh.since.Add(l.grace)
}

// connState is the http.Server's ConnState hook. It tracks which
// connections are between requests, and so may be closed for a newcomer.
func (l *limitListener) connState(c net.Conn, st http.ConnState) {
	lc, ok := c.(*limitedConn)
	if !ok {
		return
	}
	l.mu.Lock()
	lc.state, lc.since = st, time.Now()
	l.signalLocked()
	l.mu.Unlock()
}

// signalLocked wakes every Accept waiting for room.
func (l *limitListener) signalLocked() {
	close(l.changed)
	l.changed = make(chan struct{})
}

func (l *limitListener) release(c *limitedConn) {
	l.mu.Lock()
	if _, ok := l.open[c]; ok {
		delete(l.open, c)
		l.signalLocked()
	}
	l.mu.Unlock()
}

func (l *limitListener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// limitedConn gives its slot back at its first Close. Its state and since
// are guarded by the listener's mu.
type limitedConn struct {
	net.Conn
	l     *limitListener
	once  sync.Once
	state http.ConnState
	since time.Time // when it entered state
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.release(c) })
	return err
}

// CloseWrite lets net/http half-close before its lingering close after an
// error reply, as it does on a bare TCP connection, so that the client
// reads the reply rather than a reset.
func (c *limitedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
