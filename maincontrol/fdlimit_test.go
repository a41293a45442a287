//go:build linux

package maincontrol_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
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
// main control: gnet ends its whole engine when accept fails with
// EMFILE. The connections past what the limit can hold are refused, and
// it serves again once they are gone.
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
	// A burst met by a stalled event loop: gnet accepts everything
	// waiting in the listen backlog at once, before it opens (and so
	// before --max-conns refuses) any. The process is stopped while the
	// kernel queues the connections, as a loop busy for a while would
	// leave them; the main control's shortened backlog bounds them.
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
			mu.Lock()
			burst = append(burst, c)
			mu.Unlock()
		}()
	}
	wg.Wait()
	require.NoError(t, p.Cmd.Process.Signal(syscall.SIGCONT))
	conns = append(conns, burst...)
	assert.Less(t, len(burst), limit, "the backlog is bounded")
	time.Sleep(200 * time.Millisecond)
	require.False(t, p.Exited(), "the main control stopped:\n%s", p.Output())
	refused := 0
	for _, c := range burst {
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		m, err := wire.NewReader(c, 0).ReadMessage()
		require.NoError(t, err, "no first frame\n%s", p.Output())
		if m.Type() == "error" {
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
	require.Eventually(t, func() bool {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return false
		}
		defer c.Close()
		_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
		m, err := wire.NewReader(c, 0).ReadMessage()
		return err == nil && m.Type() == "welcome"
	}, 10*time.Second, 100*time.Millisecond, "serves again once the flood is gone")
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Get("http://" + httpAddr + "/healthz")
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)

	p.Signal(syscall.SIGTERM)
	require.NoError(t, p.Wait(20*time.Second), p.Output())
}
