package maincontrol_test

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/internal/syncbuf"
	"github.com/apollo11/apollo11/maincontrol"
	"github.com/apollo11/apollo11/maincontrol/core"
	"github.com/apollo11/apollo11/maincontrol/maincontroltest"
)

// fill is an arg value whose task, of type "t", holds 100 bytes:
// "t" and "arg.a=" plus 93.
var fill = strings.Repeat("v", 93)

// statsOf asks for stats and returns the two byte totals.
func statsOf(t *testing.T, cl *rawPeer) (pending, retained string) {
	t.Helper()
	cl.send("stats", "req", "st")
	m := cl.expect("stats")
	return m.Value("pending_bytes"), m.Value("retained_bytes")
}

// Over a real socket: a submit that would take the bytes held by tasks
// not yet ended past --max-pending-bytes gets queue_full; the totals show
// in stats and as gauges, the bytes move to the ended tasks kept when a
// task ends, and the oldest ended go past --retention-max-bytes.
func TestServer_PendingBytesCap(t *testing.T) {
	httpAddr := freeAddr(t)
	addr := startServer(t, maincontrol.Config{HTTPListen: httpAddr,
		Core: core.Config{MaxPendingBytes: 100, RetentionMaxBytes: 200}})
	cl := clientPeer(t, addr)
	cl.send("submit", "req", "s1", "task_type", "t", "arg.a", fill, "wait", "true")
	id1 := cl.expect("submitted").Value("task_id")
	cl.send("submit", "req", "s2", "task_type", "t")
	m := cl.expect("error")
	assert.Equal(t, "s2", m.Value("req"))
	assert.Equal(t, "queue_full", m.Value("code"))
	assert.Equal(t, "queue full: tasks not yet ended hold 100 bytes; this submit's 1 more would pass --max-pending-bytes 100; retry later", m.Value("message"))
	p, r := statsOf(t, cl)
	assert.Equal(t, "100", p)
	assert.Equal(t, "0", r)
	metrics := httpGet(t, "http://"+httpAddr+"/metrics")
	assert.Contains(t, metrics, "\napollo11_pending_bytes 100\n")
	assert.Contains(t, metrics, "\napollo11_retained_bytes 0\n")

	ex := executorPeer(t, addr, "e1", "t", 1)
	run := func(id string) {
		t.Helper()
		task := ex.expect("task")
		require.Equal(t, id, task.Value("task_id"))
		ex.send("started", "task_id", id, "version", task.Value("version"))
		ex.send("result", "task_id", id, "version", task.Value("version"), "status", "succeeded", "out.o", "xy")
		require.Equal(t, "true", ex.expect("result_ack").Value("accepted"))
		require.Equal(t, "succeeded", cl.expect("done").Value("state"))
	}
	run(id1)
	p, r = statsOf(t, cl)
	assert.Equal(t, "0", p)
	assert.Equal(t, "108", r, `100 + "out.o=xy"`)
	metrics = httpGet(t, "http://"+httpAddr+"/metrics")
	assert.Contains(t, metrics, "\napollo11_pending_bytes 0\n")
	assert.Contains(t, metrics, "\napollo11_retained_bytes 108\n")

	// Room again; a second ended task takes the kept ones past 200, and
	// the first is forgotten within a tick.
	cl.send("submit", "req", "s3", "task_type", "t", "arg.a", fill, "wait", "true")
	id2 := cl.expect("submitted").Value("task_id")
	run(id2)
	require.Eventually(t, func() bool {
		_, r := statsOf(t, cl)
		return r == "108"
	}, 5*time.Second, 10*time.Millisecond)
	cl.send("query", "req", "q", "task_id", id1)
	assert.Equal(t, "unknown_task", cl.expect("error").Value("code"))
	cl.send("query", "req", "q", "task_id", id2)
	assert.Equal(t, "succeeded", cl.expect("task_state").Value("state"))
}

// A --max-pending-bytes lowered across a restart keeps the tasks found,
// warns, and refuses submits until enough of them end.
func TestServer_PendingBytesCapLoweredAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	addr, stop := maincontroltest.Start(t, maincontrol.Config{DataDir: dir, Logger: testLogger(), Core: core.Config{MaxPendingBytes: 300}})
	cl := clientPeer(t, addr)
	var ids []string
	for range 3 {
		cl.send("submit", "req", "s", "task_type", "t", "arg.a", fill)
		ids = append(ids, cl.expect("submitted").Value("task_id"))
	}
	stop()

	var logs syncbuf.Buffer
	addr, _ = maincontroltest.Start(t, maincontrol.Config{DataDir: dir, Core: core.Config{MaxPendingBytes: 100},
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	assert.Contains(t, logs.String(), "tasks not yet ended hold more than --max-pending-bytes")
	cl = clientPeer(t, addr)
	p, _ := statsOf(t, cl)
	assert.Equal(t, "300", p)
	cl.send("submit", "req", "s", "task_type", "t")
	assert.Equal(t, "queue_full", cl.expect("error").Value("code"))
	for _, id := range ids {
		cl.send("cancel", "req", "c", "task_id", id)
		cl.expect("cancelled")
	}
	cl.send("submit", "req", "s", "task_type", "t")
	cl.expect("submitted")
	p, r := statsOf(t, cl)
	assert.Equal(t, "1", p)
	assert.Equal(t, "300", r)
}
