package maincontrol

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// limitListener serves at most max connections at once. At the cap a
// newcomer takes the place of the connection that has waited longest
// without a request under way (idle between keep-alive requests, or not
// yet done sending its first request's headers): otherwise a handful of
// idle keep-alive clients would lock every health probe out until their
// idle timeout. Only when every connection is mid-request does Accept
// wait, and those end within the server's read and write timeouts.
type limitListener struct {
	net.Listener
	max       int
	done      chan struct{} // closed by Close: a full listener stops waiting
	closeOnce sync.Once

	mu      sync.Mutex
	open    map[*limitedConn]struct{}
	changed chan struct{} // closed and replaced when a slot may have freed
}

func newLimitListener(ln net.Listener, n int) *limitListener {
	return &limitListener{Listener: ln, max: n, done: make(chan struct{}),
		open: make(map[*limitedConn]struct{}, n), changed: make(chan struct{})}
}

// Accept waits until a slot is free or some connection could give up its
// own, accepts, then takes a slot, closing the longest-waiting idle
// connection if that is what frees one. It holds at most one connection
// beyond the cap: the one accepted while the others finish requests.
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
		victim, wait := l.evictableLocked(), l.changed
		l.mu.Unlock()
		if victim != nil {
			_ = victim.Close() // frees its slot before Close returns
			continue
		}
		select {
		case <-wait:
		case <-l.done:
			_ = c.Close()
			return nil, net.ErrClosed
		}
	}
}

// waitRoom returns once a connection could be taken in.
func (l *limitListener) waitRoom() error {
	for {
		l.mu.Lock()
		room := len(l.open) < l.max || l.evictableLocked() != nil
		wait := l.changed
		l.mu.Unlock()
		if room {
			return nil
		}
		select {
		case <-wait:
		case <-l.done:
			return net.ErrClosed
		}
	}
}

// evictableLocked returns the connection to close for a newcomer: the one
// idle longest, else the one longest in its first request's headers; nil
// when every connection is mid-request.
func (l *limitListener) evictableLocked() *limitedConn {
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
	if idle != nil {
		return idle
	}
	return fresh
}

// connState is the http.Server's ConnState hook: it tracks which
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
