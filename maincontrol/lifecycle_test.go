package maincontrol_test

import (
	"context"
	"log/slog"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/internal/syncbuf"
	"github.com/apollo11/apollo11/maincontrol"
)

// A stopped server leaves nothing behind: no goroutine, no listener, even
// when it stops with peers connected and work in flight.
func TestLifecycle_StopLeavesNothing(t *testing.T) {
	before := runtime.NumGoroutine()
	var addr string
	t.Run("serve and stop", func(t *testing.T) {
		var stop func()
		addr, stop = runUntil(t, maincontrol.Config{DataDir: t.TempDir(), SnapshotEvery: 2})
		cl := clientPeer(t, addr)
		ex := executorPeer(t, addr, "e", "t", 1)
		for i := 0; i < 10; i++ {
			cl.submit("s", "task_type", "t", "wait", "true")
		}
		task := ex.expectTask(0)
		ex.start(task)
		dialRaw(t, addr) // one mid-handshake
		stop()
		cl.expectClosed()
		ex.expectClosed()
	})
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("goroutines: %d before, %d after the stop:\n%s", before, runtime.NumGoroutine(),
				buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(20 * time.Millisecond)
	}
	ln, err := net.Listen("tcp", addr)
	require.NoError(t, err, "the listener is closed")
	require.NoError(t, ln.Close())
}

// --listen with port 0 logs the port the kernel chose: the operator needs
// it to connect.
func TestServer_ReadyLogsBoundPort(t *testing.T) {
	var logs syncbuf.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- maincontrol.Run(ctx, maincontrol.Config{Listen: "127.0.0.1:0", Logger: logger}) }()
	defer func() {
		cancel()
		require.NoError(t, <-done)
	}()
	var line string
	require.Eventually(t, func() bool {
		for _, l := range strings.Split(logs.String(), "\n") {
			if strings.Contains(l, "main control ready") {
				line = l
				return true
			}
		}
		return false
	}, 10*time.Second, 10*time.Millisecond)
	assert.Contains(t, line, " tls=false ", "a plaintext port says so")
	_, rest, ok := strings.Cut(line, "listen=127.0.0.1:")
	require.True(t, ok, line)
	port, _, _ := strings.Cut(rest, " ")
	assert.NotEqual(t, "0", port, line)
	c, err := net.Dial("tcp", "127.0.0.1:"+port)
	require.NoError(t, err)
	_ = c.Close()
}
