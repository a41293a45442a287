package maincontrol

import (
	"bytes"
	"fmt"
	"log/slog"
	"net"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/internal/syncbuf"
)

// failingListener is a real loopback listener whose Accept first fails
// the way a process out of descriptors sees it.
type failingListener struct {
	net.Listener
	mu       sync.Mutex
	fails    int // Accepts left to fail
	calls    int
	accepted []int // the calls that returned a connection
}

func (l *failingListener) Accept() (net.Conn, error) {
	l.mu.Lock()
	l.calls++
	if l.fails > 0 {
		l.fails--
		l.mu.Unlock()
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.EMFILE)}
	}
	n := l.calls
	l.mu.Unlock()
	c, err := l.Listener.Accept()
	if err == nil {
		l.mu.Lock()
		l.accepted = append(l.accepted, n)
		l.mu.Unlock()
	}
	return c, err
}

// Out of descriptors, accept fails; the acceptor waits, logs once and
// accepts again, where gnet's own acceptor would end the engine.
func TestAcceptor_SurvivesEMFILE(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ln := &failingListener{Listener: inner, fails: 4}
	var logs syncbuf.Buffer
	got := make(chan []int, 1)
	a := newAcceptor(ln, slog.New(slog.NewTextHandler(&logs, nil)), func(c net.Conn) error {
		_ = c.Close()
		ln.mu.Lock()
		got <- slices.Clone(ln.accepted)
		ln.mu.Unlock()
		return nil
	})
	go a.run()
	defer a.close(time.Second)

	c, err := net.Dial("tcp", inner.Addr().String())
	require.NoError(t, err)
	defer c.Close()
	select {
	case accepted := <-got:
		assert.Equal(t, []int{5}, accepted, "four failed accepts, then the connection")
	case <-time.After(10 * time.Second):
		t.Fatal("no connection handed over after accept failed")
	}
	out := logs.String()
	assert.Contains(t, out, "out of file descriptors")
	assert.Equal(t, 1, bytes.Count([]byte(out), []byte("level=WARN")), "one line for a burst of failures: %s", out)
}

// A failed hand-over (the event loop could not take it) is a failure
// like a failed accept: the acceptor goes on with the next connection.
func TestAcceptor_HandOverFails(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var handOvers atomic.Int32
	handed := make(chan int, 2)
	a := newAcceptor(ln, slog.New(slog.NewTextHandler(&syncbuf.Buffer{}, nil)), func(c net.Conn) error {
		_ = c.Close()
		n := int(handOvers.Add(1))
		handed <- n
		if n == 1 {
			return fmt.Errorf("dup: %w", syscall.EMFILE)
		}
		return nil
	})
	go a.run()
	defer a.close(time.Second)
	for i := 1; i <= 2; i++ {
		c, err := net.Dial("tcp", ln.Addr().String())
		require.NoError(t, err)
		defer c.Close()
		select {
		case got := <-handed:
			assert.Equal(t, i, got)
		case <-time.After(10 * time.Second):
			t.Fatalf("connection %d not handed over", i)
		}
	}
}

// close ends a backoff at once and closes the listener.
func TestAcceptor_CloseDuringBackoff(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ln := &failingListener{Listener: inner, fails: 1 << 30}
	a := newAcceptor(ln, slog.New(slog.NewTextHandler(&syncbuf.Buffer{}, nil)), func(c net.Conn) error {
		return c.Close()
	})
	go a.run()
	require.Eventually(t, func() bool {
		ln.mu.Lock()
		defer ln.mu.Unlock()
		return ln.calls >= 8 // backed off to over half a second
	}, 10*time.Second, 5*time.Millisecond)
	start := time.Now()
	require.True(t, a.close(5*time.Second))
	assert.Less(t, time.Since(start), 500*time.Millisecond, "close waited out the backoff")
	_, err = net.DialTimeout("tcp", inner.Addr().String(), time.Second)
	assert.Error(t, err, "the listener is closed")
}

// A hand-over to an event loop that died never returns: close gives up
// after its grace, so that a stop still ends.
func TestAcceptor_CloseGivesUpOnAStuckHandOver(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	stuck, release := make(chan struct{}), make(chan struct{})
	defer close(release)
	a := newAcceptor(ln, slog.New(slog.NewTextHandler(&syncbuf.Buffer{}, nil)), func(c net.Conn) error {
		close(stuck)
		<-release
		return c.Close()
	})
	go a.run()
	c, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer c.Close()
	<-stuck
	assert.False(t, a.close(50*time.Millisecond), "a stuck hand-over counted as ended")
}
