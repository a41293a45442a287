package maincontrol_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/maincontrol"
)

// An idle main control, with tasks kept and a client connected, writes
// nothing to disk and is woken by its timers about once a second: the
// wake-ups are counted, not timed, over a window, and bounded by the
// window's length. With a tick every 20 ms they were 50 a second.
func TestServer_IdleIsQuiet(t *testing.T) {
	dir := t.TempDir()
	httpAddr := freeAddr(t)
	addr := startServer(t, maincontrol.Config{DataDir: dir, HTTPListen: httpAddr, SnapshotEvery: 3})
	cl := clientPeer(t, addr)
	for i := range 3 {
		cl.submit("s"+strconv.Itoa(i), "task_type", "t")
	}
	require.Eventually(t, func() bool {
		return len(snapshotsIn(t, dir)) == 1 && len(tempFiles(t, dir)) == 0
	}, 20*time.Second, 10*time.Millisecond, "the snapshot of the three tasks")
	// Reading the wake-ups between two metrics scrapes: the scrapes wake
	// the HTTP server, not the timers.
	wakeups := func() float64 {
		m := regexp.MustCompile(`\napollo11_timer_wakeups_total (\d+)\n`).FindStringSubmatch(httpGet(t, "http://"+httpAddr+"/metrics"))
		require.NotNil(t, m, "no apollo11_timer_wakeups_total")
		n, err := strconv.ParseFloat(m[1], 64)
		require.NoError(t, err)
		return n
	}
	before, files := wakeups(), dirState(t, dir)
	start := time.Now()
	time.Sleep(3 * time.Second) // the window measured; its length bounds the count
	after, window := wakeups(), time.Since(start)
	assert.LessOrEqual(t, after-before, window.Seconds()+3,
		"timer wake-ups in %v of idleness", window)
	assert.Equal(t, files, dirState(t, dir), "an idle main control writes nothing")
	assert.Equal(t, "pending", cl.stateOf(1), "and it still serves")
}

// dirState is every file of dir with its size and modification time.
func dirState(t *testing.T, dir string) map[string]string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	out := map[string]string{}
	for _, e := range ents {
		info, err := e.Info()
		require.NoError(t, err)
		out[e.Name()] = strconv.FormatInt(info.Size(), 10) + "@" + info.ModTime().String()
	}
	return out
}

func tempFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	for _, glob := range []string{"*.tmp", ".*"} {
		m, err := filepath.Glob(filepath.Join(dir, glob))
		require.NoError(t, err)
		out = append(out, m...)
	}
	return out
}
