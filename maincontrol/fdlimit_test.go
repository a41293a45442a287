//go:build linux

package maincontrol_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
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
	refused := 0
	for range limit + limit/2 {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		require.NoError(t, err, "the main control stopped accepting\n%s", p.Output())
		conns = append(conns, c)
		_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
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
