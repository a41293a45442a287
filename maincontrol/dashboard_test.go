package maincontrol_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/maincontrol"
)

// The HTTP port serves the dashboard beside /metrics, and bounds what a
// request's headers may hold (a dashboard URL or cookie included).
func TestHTTP_DashboardServedAndHeadersBounded(t *testing.T) {
	httpAddr := freeAddr(t)
	startServer(t, maincontrol.Config{HTTPListen: httpAddr})
	hc := &http.Client{Timeout: 10 * time.Second}
	get := func(path string, header string) (int, string) {
		req, err := http.NewRequest("GET", "http://"+httpAddr+path, nil)
		require.NoError(t, err)
		if header != "" {
			req.Header.Set("X-Big", header)
		}
		resp, err := hc.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(body)
	}
	code, body := get("/", "")
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, `id="counts"`)
	code, body = get("/metrics", "")
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, "apollo11_tasks")
	code, _ = get("/", strings.Repeat("x", 32<<10))
	assert.Equal(t, http.StatusRequestHeaderFieldsTooLarge, code)
}
