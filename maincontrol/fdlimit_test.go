//go:build linux

package maincontrol_test

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/internal/testbin"
	"github.com/apollo11/apollo11/wire"
)

// With a low open-file limit and the default --max-conns, a flood of
// connections to the main port and the metrics port must not stop the
// main control: gnet's own acceptor ends its whole engine when accept
// fails with EMFILE (accept.go). The connections past what the limit can
// hold are refused (or, still in their handshake, make room for
// newcomers), and it serves again once they are gone.
func TestMaincontrol_OpenFileLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a process and floods it")
	}
	const limit = 256
	bin := testbin.Build(t)
	addr, httpAddr := testbin.FreeAddr(t), testbin.FreeAddr(t)
	p := testbin.Start(t, "/bin/sh", nil, "-c", fmt.Sprintf(`ulimit -n %d && exec "$0" "$@"`, limit),
		bin, "maincontrol", "--listen", addr, "--http-listen", httpAddr, "--data-dir", t.TempDir(), "--log-level", "info")
	require.NoError(t, testbin.WaitWelcome(addr, 20*time.Second, nil), p.Output())

	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			_ = c.Close()
		}
	}()
	// Idle keep-alive connections to the metrics port, each after a
	// request, and more waiting in its backlog.
	for range 2 * limit / 4 {
		c, err := net.DialTimeout("tcp", httpAddr, time.Second)
		require.NoError(t, err)
		conns = append(conns, c)
		_, _ = io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
	}
	// A burst met by a stalled main control: more connections wait in
	// the listen backlog than the limit has descriptors. The process is
	// stopped while the kernel queues them, as a loop busy for a while
	// would leave them; they must be taken one at a time, each refused
	// or served before the next is accepted.
	require.NoError(t, p.Cmd.Process.Signal(syscall.SIGSTOP))
	var (
		mu    sync.Mutex
		burst []net.Conn
		wg    sync.WaitGroup
	)
	for range limit + limit/2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.DialTimeout("tcp", addr, 500*time.Millisecond)
			if err != nil {
				return // the backlog is full: the kernel drops the SYN
			}
			// Through the handshake, a connection is refused at the cap
			// rather than closed to make room for a newer one.
			_, _ = c.Write(helloFrame(t))
			mu.Lock()
			burst = append(burst, c)
			mu.Unlock()
		}()
	}
	wg.Wait()
	require.NoError(t, p.Cmd.Process.Signal(syscall.SIGCONT))
	conns = append(conns, burst...)
	if somaxconn(t) > 2*limit {
		assert.Greater(t, len(burst), limit, "the kernel queued more connections than the limit has descriptors")
	}
	time.Sleep(200 * time.Millisecond)
	require.False(t, p.Exited(), "the main control stopped:\n%s", p.Output())
	refused := 0
	deadline := time.Now().Add(5 * time.Second)
	for _, c := range burst {
		_ = c.SetReadDeadline(deadline)
		if m := firstAnswer(t, c); m.Type() == "error" {
			assert.Equal(t, "unavailable", m.Value("code"))
			refused++
		}
	}
	assert.Positive(t, refused, "connections past the limit are refused")
	assert.False(t, p.Exited(), "the main control stopped:\n%s", p.Output())
	assert.Contains(t, p.Output(), "--max-conns lowered to fit the open-file limit")

	for _, c := range conns {
		_ = c.Close()
	}
	conns = nil
	requireWelcomes(t, addr, "serves again once the flood is gone")
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Get("http://" + httpAddr + "/healthz")
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)

	p.Signal(syscall.SIGTERM)
	require.NoError(t, p.Wait(20*time.Second), p.Output())
}

// somaxconn is the kernel's cap on a listen backlog (0: unknown).
func somaxconn(t *testing.T) int {
	b, err := os.ReadFile("/proc/sys/net/core/somaxconn")
	if err != nil {
		t.Logf("somaxconn: %v", err)
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return n
}

// Several clients opening connections as fast as they can, far past the
// open-file limit, while the main control runs: it refuses what it
// cannot hold and goes on serving. With gnet's acceptor, which took
// every queued connection at once, three such clients stopped it.
func TestMaincontrol_ConnectionFlood(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a process and floods it")
	}
	const limit, clients, each = 1024, 3, 3000
	bin := testbin.Build(t)
	addr := testbin.FreeAddr(t)
	p := testbin.Start(t, "/bin/sh", nil, "-c", fmt.Sprintf(`ulimit -n %d && exec "$0" "$@"`, limit),
		// The flood's connections never say hello: a handshake timeout
		// longer than the test keeps them (and the port full) until the end.
		bin, "maincontrol", "--listen", addr, "--data-dir", t.TempDir(), "--log-level", "info", "--handshake-timeout", "2m")
	require.NoError(t, testbin.WaitWelcome(addr, 20*time.Second, nil), p.Output())

	// A client keeps the event loop busy meanwhile, as real traffic
	// would: accepting must not outrun what the loop opens and refuses.
	busy, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer busy.Close()
	go func() { _, _ = io.Copy(io.Discard, busy) }()
	stats, err := wire.AppendFrame(nil, wire.NewMessage("stats"))
	require.NoError(t, err)
	hello, err := wire.AppendFrame(nil, wire.NewMessage("hello"))
	require.NoError(t, err)
	_, err = busy.Write(hello)
	require.NoError(t, err)
	flooding := make(chan struct{})
	go func() {
		batch := bytes.Repeat(stats, 2000)
		for {
			select {
			case <-flooding:
				return
			default:
			}
			if _, err := busy.Write(batch); err != nil {
				return
			}
		}
	}()

	var (
		mu      sync.Mutex
		held    []net.Conn
		wg      sync.WaitGroup
		dialled int
	)
	defer func() {
		for _, c := range held {
			_ = c.Close()
		}
	}()
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				c, err := net.DialTimeout("tcp", addr, 2*time.Second)
				if err != nil {
					continue // a full backlog drops the SYN
				}
				_, _ = c.Write(hello) // through the handshake: refused at the cap, not evicted
				mu.Lock()
				held = append(held, c)
				dialled++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(flooding)
	t.Logf("%d of %d connections made", dialled, clients*each)
	require.Greater(t, dialled, limit, "the flood did not pass the limit")
	time.Sleep(200 * time.Millisecond)
	require.False(t, p.Exited(), "the main control stopped:\n%s", p.Output())

	// While the flood holds its connections, a newcomer is refused with
	// a reason, not left hanging or reset. One arriving while some of
	// the flood are still in their handshake takes the place of one.
	require.Eventually(t, func() bool {
		c, err := net.DialTimeout("tcp", addr, 2*time.Second)
		require.NoError(t, err)
		defer c.Close()
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		m, err := wire.NewReader(c, 0).ReadMessage()
		require.NoError(t, err, p.Output())
		if m.Type() == "welcome" {
			return false
		}
		assert.Equal(t, "error", m.Type())
		assert.Equal(t, "unavailable", m.Value("code"))
		return true
	}, 20*time.Second, 10*time.Millisecond, "no newcomer was refused")

	mu.Lock()
	for _, c := range held {
		_ = c.Close()
	}
	held = nil
	mu.Unlock()
	requireWelcomes(t, addr, "serves again once the flood is gone")
	assert.False(t, p.Exited(), "the main control stopped:\n%s", p.Output())
	p.Signal(syscall.SIGTERM)
	require.NoError(t, p.Wait(20*time.Second), p.Output())
}

func helloFrame(t *testing.T) []byte {
	b, err := wire.AppendFrame(nil, wire.NewMessage("hello"))
	require.NoError(t, err)
	return b
}

// firstAnswer reads what a connection that sent hello got: an error in
// place of welcome, or else what came after welcome (hello_ok, or the
// error of one closed to make room while still in its handshake).
func firstAnswer(t *testing.T, c net.Conn) *wire.Message {
	t.Helper()
	r := wire.NewReader(c, 0)
	m, err := r.ReadMessage()
	require.NoError(t, err, "no first frame")
	if m.Type() != "welcome" {
		return m
	}
	m, err = r.ReadMessage()
	require.NoError(t, err, "nothing after welcome")
	return m
}

// requireWelcomes waits until a new connection to addr is welcomed.
func requireWelcomes(t *testing.T, addr, msg string) {
	t.Helper()
	require.Eventually(t, func() bool {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return false
		}
		defer c.Close()
		_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
		m, err := wire.NewReader(c, 0).ReadMessage()
		return err == nil && m.Type() == "welcome"
	}, 10*time.Second, 100*time.Millisecond, msg)
}
