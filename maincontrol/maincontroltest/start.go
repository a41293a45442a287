// Package maincontroltest runs a real main control inside a test process,
// for tests of the packages that talk to one (client, executor, bench).
package maincontroltest

import (
	"context"
	"io"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/apollo11/apollo11/maincontrol"
)

// Start runs a main control with cfg until the test ends (or stop is
// called) and returns its address; cfg.OnReady, if set, runs first. An empty Listen gets a loopback port
// that was free a moment ago; a nil Logger discards. The main control
// must stop cleanly; stop may be called more than once.
func Start(t testing.TB, cfg maincontrol.Config) (addr string, stop func()) {
	t.Helper()
	if cfg.Listen == "" {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		cfg.Listen = ln.Addr().String()
		ln.Close()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	ready := make(chan struct{})
	onReady := cfg.OnReady
	cfg.OnReady = func(addr string) {
		if onReady != nil {
			onReady(addr)
		}
		close(ready)
	}
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
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("main control stopped with %v", err)
				}
			case <-time.After(20 * time.Second):
				t.Error("main control did not stop in 20 s")
			}
		})
	}
	t.Cleanup(stop)
	return cfg.Listen, stop
}
