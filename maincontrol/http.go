package maincontrol

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
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
	s.http = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := s.http.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("HTTP server stopped", "err", err)
		}
	}()
	s.log.Info("serving /metrics and /healthz", "http_listen", ln.Addr().String())
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
