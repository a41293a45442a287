package maincontrol_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/maincontrol"
)

// Connections holding every slot of the metrics port must not lock the
// health probes out: idle keep-alive ones held them for the idle timeout
// (a minute), silent ones for the header timeout, and an orchestrator
// would have restarted a healthy main control.
func TestHTTP_ProbesGetPastHeldConnections(t *testing.T) {
	for _, tc := range []struct {
		name string
		hold func(t *testing.T, c net.Conn)
	}{
		{"idle keep-alive", func(t *testing.T, c net.Conn) {
			_, err := io.WriteString(c, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
			require.NoError(t, err)
			require.NoError(t, c.SetReadDeadline(time.Now().Add(10*time.Second)))
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			require.NoError(t, err)
			_, err = io.Copy(io.Discard, resp.Body)
			require.NoError(t, err)
			require.NoError(t, resp.Body.Close())
		}},
		{"silent", func(*testing.T, net.Conn) {}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			httpAddr := freeAddr(t)
			startServer(t, maincontrol.Config{HTTPListen: httpAddr})
			for range maincontrol.HTTPMaxConns {
				c, err := net.DialTimeout("tcp", httpAddr, 5*time.Second)
				require.NoError(t, err)
				t.Cleanup(func() { _ = c.Close() })
				tc.hold(t, c)
			}
			// Well under the held connections' timeouts (3 s and more).
			probe := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
			for i := range 8 {
				resp, err := probe.Get("http://" + httpAddr + "/healthz")
				require.NoError(t, err, "probe %d", i)
				body, err := io.ReadAll(resp.Body)
				require.NoError(t, err)
				_ = resp.Body.Close()
				require.Equal(t, http.StatusOK, resp.StatusCode)
				require.Equal(t, "ok\n", string(body))
			}
		})
	}
}
