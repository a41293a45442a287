package maincontrol

import (
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/internal/syncbuf"
)

func tickServer(t *testing.T) *Server {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := &Server{log: slog.New(slog.NewTextHandler(&syncbuf.Buffer{}, nil))}
	s.acceptor = newAcceptor(ln, s.log, func(c net.Conn) error { return c.Close() })
	go s.acceptor.run()
	t.Cleanup(func() { s.acceptor.close(time.Second) })
	return s
}

// Without ticks for tickMisses rounds, the loops count as gone.
func TestWatchTicks_NoTicks(t *testing.T) {
	s := tickServer(t)
	select {
	case <-s.watchTicks(5 * time.Millisecond): // no ticks at all: fast is fine
	case <-time.After(10 * time.Second):
		t.Fatal("ticks stopped, but the watch did not say so")
	}
}

// While OnTick runs, the watch stays quiet, and it ends with the acceptor.
func TestWatchTicks_Ticking(t *testing.T) {
	s := tickServer(t)
	// Rounds of 300 ms: the ticking goroutine would have to starve for
	// 600 ms to be missed two rounds in a row.
	const every = 300 * time.Millisecond
	died := s.watchTicks(every)
	deadline := time.Now().Add(2 * tickMisses * every)
	for time.Now().Before(deadline) {
		s.timers.ticks.Add(1)
		select {
		case <-died:
			t.Fatal("declared dead while ticking")
		case <-time.After(time.Millisecond):
		}
	}
	s.acceptor.close(time.Second)
	select {
	case <-died:
		t.Fatal("a stop is not a death")
	case <-time.After(2 * tickMisses * every):
	}
}

// A tick that waits for the server's lock, which a busy event loop holds
// for many rounds, is a live ticker: the watch must not call the loops
// gone. Under heavy load one loop's turn of large replies took seconds,
// and the main control stopped with "an event loop stopped".
func TestWatchTicks_TickWaitingForTheLock(t *testing.T) {
	s := tickServer(t)
	s.stopping = true // the tick then returns once it has the lock
	s.mu.Lock()
	returned := make(chan struct{})
	go func() {
		s.OnTick()
		close(returned)
	}()
	const every = 5 * time.Millisecond
	died := s.watchTicks(every)
	select {
	case <-died:
		s.mu.Unlock()
		t.Fatal("declared dead while a tick waited for the lock")
	case <-time.After(40 * tickMisses * every):
	}
	s.mu.Unlock()
	<-returned
	select {
	case <-died: // no tick begins any more: the loops are gone
	case <-time.After(10 * time.Second):
		t.Fatal("ticks stopped, but the watch did not say so")
	}
}
