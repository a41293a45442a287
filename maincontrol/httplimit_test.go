package maincontrol

import (
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// serveLimited accepts from a limitListener of one slot until it closes,
// handing each connection over.
func serveLimited(t *testing.T, grace time.Duration) (*limitListener, <-chan net.Conn) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	lim := newLimitListener(inner, 1, grace)
	got := make(chan net.Conn, 4)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := lim.Accept()
			if err != nil {
				return
			}
			got <- c
		}
	}()
	t.Cleanup(func() {
		_ = lim.Close()
		<-done
		close(got)
		for c := range got {
			_ = c.Close()
		}
	})
	return lim, got
}

// A probe's connection is fresh until its headers are read, which on a
// busy host may be late: a newcomer must not close it then, or the
// probe is reset. Under soak, churning keep-alive peers reset 9% of them.
func TestLimitListener_FreshKeepsItsSlotForItsGrace(t *testing.T) {
	const grace = 300 * time.Millisecond
	lim, got := serveLimited(t, grace)
	addr := lim.Addr().String()

	start := time.Now() // before the probe's slot was taken
	probe, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer probe.Close()
	first := <-got
	defer first.Close()

	newcomer, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer newcomer.Close()
	// The probe's server side is closed for the newcomer, but only once
	// its grace is over: the client sees the close no sooner.
	require.NoError(t, probe.SetReadDeadline(time.Now().Add(30*time.Second)))
	_, err = probe.Read(make([]byte, 1))
	require.Error(t, err)
	require.False(t, isTimeout(err), "the fresh connection was never closed: %v", err)
	require.GreaterOrEqual(t, time.Since(start), grace, "a fresh connection was closed within its grace")
	select {
	case c := <-got:
		_ = c.Close()
	case <-time.After(30 * time.Second):
		t.Fatal("the newcomer was not accepted after the grace")
	}
}

// An idle keep-alive connection gives its slot to a newcomer at once,
// whatever fresh connection is still in its grace.
func TestLimitListener_IdleGivesWayAtOnce(t *testing.T) {
	lim, got := serveLimited(t, time.Hour)
	addr := lim.Addr().String()

	idle, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer idle.Close()
	c := <-got
	lim.connState(c, http.StateActive)
	lim.connState(c, http.StateIdle)

	newcomer, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer newcomer.Close()
	select {
	case n := <-got:
		_ = n.Close()
	case <-time.After(30 * time.Second):
		t.Fatal("an idle connection kept its slot from a newcomer")
	}
	require.NoError(t, idle.SetReadDeadline(time.Now().Add(30*time.Second)))
	_, err = idle.Read(make([]byte, 1))
	require.Error(t, err)
	require.False(t, isTimeout(err), "the idle connection was not closed: %v", err)
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}
