// Package maincontroltest runs a real main control inside a test process,
// for tests of the packages that talk to one (client, executor, bench).
package maincontroltest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"runtime"
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
	addr, stopErr, err := Launch(cfg)
	if err != nil {
		t.Fatal(err)
	}
	stop = sync.OnceFunc(func() {
		if err := stopErr(); err != nil {
			t.Error(err)
		}
	})
	t.Cleanup(stop)
	return addr, stop
}

// Launch is Start without a test: for Example functions, which have none.
// The caller must call stop, which may be called more than once.
func Launch(cfg maincontrol.Config) (addr string, stop func() error, err error) {
	if cfg.Listen == "" {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return "", nil, err
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
		return "", nil, fmt.Errorf("main control did not start: %v", err)
	case <-time.After(10 * time.Second):
		cancel()
		return "", nil, errors.New("main control did not start in 10 s")
	}
	var once sync.Once
	var stopErr error
	stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					stopErr = fmt.Errorf("main control stopped with %v", err)
				}
			case <-time.After(20 * time.Second):
				// The stacks say what it waits on: a hang seen once in
				// fifty runs is not seen again on demand.
				buf := make([]byte, 16<<20)
				buf = buf[:runtime.Stack(buf, true)]
				fmt.Fprintf(os.Stderr, "main control on %s did not stop in 20 s; goroutines:\n%s\n", cfg.Listen, buf)
				stopErr = errors.New("main control did not stop in 20 s (goroutines on stderr)")
			}
		})
		return stopErr
	}
	return cfg.Listen, stop, nil
}
