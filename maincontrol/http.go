package maincontrol

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// A probe or a scrape is one small request. A peer slower than these is
// not one, and holds a descriptor the main port may need. The reply may
// take longer. /metrics waits for the server's lock, which a busy event
// loop holds for a while on a loaded host.
const (
	httpReadTimeout  = 3 * time.Second
	httpWriteTimeout = 10 * time.Second
	httpIdleTimeout  = 15 * time.Second
	// httpMaxHeaderBytes bounds a request's headers, its URL and cookies
	// included. The dashboard's longest is a filtered list's query.
	httpMaxHeaderBytes = 16 << 10
)

// startHTTP serves /metrics, /healthz and the dashboard (every other
// path) on cfg.HTTPListen. It is off unless that is set.
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
	s.dash, s.dashActor = s.newDashboard()
	mux.Handle("/", s.dash)
	// Every connection is a file descriptor the main port may need. So
	// at most httpMaxConns are served, as a scraper needs one, and slow
	// ones are cut short. A newcomer at the cap replaces an idle one,
	// never a fresh one in its grace (httplimit.go). Probes must get through.
	lim := newLimitListener(ln, httpMaxConns, httpFreshGrace)
	s.http = &http.Server{Handler: mux, ReadHeaderTimeout: httpReadTimeout, ReadTimeout: httpReadTimeout,
		WriteTimeout: httpWriteTimeout, IdleTimeout: httpIdleTimeout, MaxHeaderBytes: httpMaxHeaderBytes, ConnState: lim.connState,
		ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)}
	go func() {
		if err := s.http.Serve(lim); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("HTTP server stopped", "err", err)
		}
	}()
	s.log.Info("serving /metrics, /healthz and the dashboard", "http_listen", ln.Addr().String())
	if beyondLoopback(s.cfg.HTTPListen) {
		s.log.Warn("metrics port listening beyond loopback: /metrics and /healthz have no auth and show queue depths, executors and disk latency to anyone who reaches it",
			"http_listen", s.cfg.HTTPListen)
		if s.cfg.Core.Token == nil {
			s.log.Warn("dashboard beyond loopback without --token-file: its pages show tasks and their args to anyone who reaches it (its actions are taken only from this host)",
				"http_listen", s.cfg.HTTPListen)
		} else {
			s.log.Warn("dashboard beyond loopback over plain HTTP: the login token and the session cookie travel in clear; put a TLS proxy in front or listen on loopback",
				"http_listen", s.cfg.HTTPListen)
		}
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
	s.dash.Close()
	s.dashActor.Close()
}
