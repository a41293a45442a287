package systemd_test

import (
	"net"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/systemd"
)

// fakeSystemd listens on a unixgram socket like the service manager.
func fakeSystemd(t *testing.T) (*net.UnixConn, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "notify.sock")
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c, path
}

func recv(t *testing.T, c *net.UnixConn) string {
	t.Helper()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(2*time.Second)))
	buf := make([]byte, 256)
	n, _, err := c.ReadFromUnix(buf)
	require.NoError(t, err)
	return string(buf[:n])
}

func TestNotifier_Messages(t *testing.T) {
	c, path := fakeSystemd(t)
	t.Setenv("NOTIFY_SOCKET", path)
	t.Setenv("WATCHDOG_USEC", "2000000")
	t.Setenv("WATCHDOG_PID", "")
	n := systemd.FromEnv()
	require.True(t, n.Enabled())
	assert.Equal(t, time.Second, n.WatchdogInterval())

	require.NoError(t, n.Ready())
	assert.Equal(t, "READY=1\nSTATUS=ready", recv(t, c))

	now := time.Now()
	require.NoError(t, n.Watchdog(now))
	assert.Equal(t, "WATCHDOG=1", recv(t, c))
	require.NoError(t, n.Watchdog(now.Add(500*time.Millisecond))) // too soon: nothing sent
	require.NoError(t, n.Watchdog(now.Add(1100*time.Millisecond)))
	assert.Equal(t, "WATCHDOG=1", recv(t, c))

	require.NoError(t, n.Stopping())
	assert.Equal(t, "STOPPING=1", recv(t, c))
}

func TestNotifier_WatchdogForAnotherPid(t *testing.T) {
	_, path := fakeSystemd(t)
	t.Setenv("NOTIFY_SOCKET", path)
	t.Setenv("WATCHDOG_USEC", "2000000")
	t.Setenv("WATCHDOG_PID", strconv.Itoa(1)) // not us
	assert.Zero(t, systemd.FromEnv().WatchdogInterval())
}

func TestNotifier_NoSocketIsNoop(t *testing.T) {
	t.Setenv("NOTIFY_SOCKET", "")
	n := systemd.FromEnv()
	assert.False(t, n.Enabled())
	assert.NoError(t, n.Ready())
	assert.NoError(t, n.Watchdog(time.Now()))
}
