package maincontrol_test

import (
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

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
