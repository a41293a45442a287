package main

import (
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// stuckWriter is a stderr nobody reads: every Write waits until released.
type stuckWriter struct{ release chan struct{} }

func (w stuckWriter) Write(p []byte) (int, error) {
	<-w.release
	return len(p), nil
}

// A daemon that fails while its stderr is stuck still exits, within its
// log's flush timeout and the error line's: a supervisor restarts only a
// process that ended. Here the main control cannot listen (the port is
// taken), logs and returns its error into a stderr that never drains.
func TestRun_FailureExitsWithStderrStuck(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	w := stuckWriter{release: make(chan struct{})}
	defer close(w.release)
	code := make(chan int, 1)
	go func() {
		code <- run([]string{"maincontrol", "--listen", ln.Addr().String(), "--data-dir", ""}, io.Discard, w)
	}()
	select {
	case c := <-code:
		require.NotZero(t, c, "a main control that cannot listen fails")
	case <-time.After(2*sinkCloseTimeout + 5*time.Second):
		t.Fatal("run still writing to the stuck stderr")
	}
}

// The error line still reaches a stderr that reads.
func TestPrintErr_Writes(t *testing.T) {
	var b strings.Builder
	printErr(&b, "status", io.ErrUnexpectedEOF)
	require.Equal(t, "apollo11 status: unexpected EOF\n", b.String())
}
