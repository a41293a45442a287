package maincontrol

import (
	"context"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runServer starts a server on cfg, quiet, and waits until it is ready.
// The test's cleanup stops it and checks that it stopped cleanly.
func runServer(t *testing.T, cfg Config) *Server {
	t.Helper()
	ready := make(chan struct{})
	cfg.Logger, cfg.OnReady = slog.New(slog.DiscardHandler), func(string) { close(ready) }
	s, err := newServer(cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		assert.NoError(t, <-done)
	})
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("the server on %s did not start: %v", cfg.Listen, err)
	}
	return s
}
