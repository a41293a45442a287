package maincontrol_test

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/internal/syncbuf"
	"github.com/apollo11/apollo11/maincontrol"
	"github.com/apollo11/apollo11/maincontrol/core"
)

// A token on an HTTP port beyond loopback protects nothing on the way:
// startup warns that it and the cookie travel in clear.
func TestHTTP_WarnsTokenInClear(t *testing.T) {
	t.Parallel()
	var logs syncbuf.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	startServer(t, maincontrol.Config{Logger: logger, HTTPListen: "0.0.0.0:0", Core: core.Config{Token: testToken}})
	require.Eventually(t, func() bool { return strings.Contains(logs.String(), "travel in clear") },
		10*time.Second, 10*time.Millisecond, logs.String())
}
