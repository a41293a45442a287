package bench_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/bench"
	"github.com/apollo11/apollo11/maincontrol"
)

// startMainControl runs an in-memory main control in this process until
// the test ends and returns its address.
func startMainControl(t testing.TB, mutate func(*maincontrol.Config)) string {
	t.Helper()
	addr, err := bench.FreeAddr()
	require.NoError(t, err)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg := maincontrol.Config{Listen: addr, Logger: log}
	if mutate != nil {
		mutate(&cfg)
	}
	ready := make(chan struct{})
	cfg.OnReady = func(string) { close(ready) }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- maincontrol.Run(ctx, cfg) }()
	select {
	case <-ready:
	case err := <-done:
		cancel()
		t.Fatalf("main control did not start: %v", err)
	case <-time.After(10 * time.Second):
		cancel()
		t.Fatal("main control did not start in 10 s")
	}
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(20 * time.Second):
			t.Error("main control did not stop in 20 s")
		}
	})
	return addr
}
