package maincontrol

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"
)

// startHTTP serves /metrics and /healthz on cfg.HTTPListen. It is off
// unless that is set.
func (s *Server) startHTTP() error {
	if s.cfg.HTTPListen == "" {
		return nil
	}
	ln, err := net.Listen("tcp", s.cfg.HTTPListen)
	if err != nil {
		return fmt.Errorf("cannot listen for HTTP on %s: %w", s.cfg.HTTPListen, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", s.metrics.reg.Handler())
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		s.mu.Lock()
		ok, stopping := s.core.Available(), s.stopping
		s.mu.Unlock()
		switch {
		case stopping:
			http.Error(w, "stopping", http.StatusServiceUnavailable)
		case !ok:
			http.Error(w, "log not writable", http.StatusServiceUnavailable)
		default:
			_, _ = w.Write([]byte("ok\n"))
		}
	})
	// Every connection is a file descriptor the main port may need, so
	// idle and slow ones are closed and at most httpMaxConns are served
	// (a scraper needs one); more wait in the kernel's accept queue.
	s.http = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second,
		WriteTimeout: 10 * time.Second, IdleTimeout: 60 * time.Second,
		ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)}
	go func() {
		if err := s.http.Serve(newLimitListener(ln, httpMaxConns)); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("HTTP server stopped", "err", err)
		}
	}()
	s.log.Info("serving /metrics and /healthz", "http_listen", ln.Addr().String())
	if beyondLoopback(s.cfg.HTTPListen) {
		s.log.Warn("metrics port listening beyond loopback: /metrics and /healthz have no auth and show queue depths, executors and disk latency to anyone who reaches it",
			"http_listen", s.cfg.HTTPListen)
	}
	return nil
}

// limitListener accepts a connection only while fewer than its capacity
// are open; the others wait in the listen backlog, taking no descriptor.
type limitListener struct {
	net.Listener
	slots     chan struct{}
	done      chan struct{} // closed by Close: a full listener stops waiting
	closeOnce sync.Once
}

func newLimitListener(ln net.Listener, n int) net.Listener {
	return &limitListener{Listener: ln, slots: make(chan struct{}, n), done: make(chan struct{})}
}

func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.slots <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	return &limitedConn{Conn: c, release: func() { <-l.slots }}, nil
}

func (l *limitListener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// limitedConn gives its slot back once, at its first Close.
type limitedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
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

func (s *Server) stopHTTP() {
	if s.http == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = s.http.Shutdown(ctx)
}
