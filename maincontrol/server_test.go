package maincontrol_test

import (
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/maincontrol"
	"github.com/apollo11/apollo11/snapshot/snapshottest"
)

func TestServer_EchoFlowInMemory(t *testing.T) {
	addr := startServer(t, maincontrol.Config{})
	cl := clientPeer(t, addr)
	ex := executorPeer(t, addr, "e1", "echo", 2)
	cl.send("submit", "req", "r1", "task_type", "echo", "arg.msg", "hi", "wait", "true")
	sub := cl.expect("submitted")
	assert.Equal(t, "r1", sub.Value("req"))
	task := ex.expect("task")
	id, ver := task.Value("task_id"), task.Value("version")
	ex.send("started", "task_id", id, "version", ver)
	ex.send("result", "task_id", id, "version", ver, "status", "succeeded", "out.msg", task.Value("arg.msg"))
	ack := ex.expect("result_ack")
	assert.Equal(t, "true", ack.Value("accepted"))
	done := cl.expect("done")
	assert.Equal(t, "succeeded", done.Value("state"))
	assert.Equal(t, "hi", done.Value("out.msg"))
}

func TestServer_MetricsAndHealthz(t *testing.T) {
	httpAddr := freeAddr(t)
	addr := startServer(t, maincontrol.Config{DataDir: t.TempDir(), HTTPListen: httpAddr})
	cl := clientPeer(t, addr)
	ex := executorPeer(t, addr, "e1", "echo", 1)
	cl.send("submit", "req", "r1", "task_type", "echo")
	cl.expect("submitted")
	task := ex.expect("task")
	ex.send("started", "task_id", task.Value("task_id"), "version", task.Value("version"))
	ex.send("result", "task_id", task.Value("task_id"), "version", task.Value("version"), "status", "succeeded")
	ex.expect("result_ack")

	body := httpGet(t, "http://"+httpAddr+"/metrics")
	assert.Contains(t, body, `apollo11_tasks{state="succeeded"} 1`)
	assert.Contains(t, body, "apollo11_executors 1\n")
	assert.Contains(t, body, "apollo11_dispatch_wait_seconds_count 1\n")
	assert.Contains(t, body, "apollo11_tasks_succeeded_total 1\n")
	assert.Contains(t, body, "apollo11_log_fsync_seconds_count")
	assert.Equal(t, "ok\n", httpGet(t, "http://"+httpAddr+"/healthz"))
}

// A snapshot that fails shows in the metrics (a counter and a gauge that
// is 1 while the latest one failed), and clears when one is written again;
// /healthz stays ok, since the log still holds every change.
func TestServer_SnapshotFailureMetrics(t *testing.T) {
	ffs := snapshottest.NewFaultFS(func(name string, _ int) bool { return strings.Contains(filepath.Base(name), "snapshot-") })
	ffs.FailWritesAfter(0, errors.New("injected snapshot write failure"))
	httpAddr := freeAddr(t)
	addr := startServer(t, maincontrol.Config{DataDir: t.TempDir(), FS: ffs, HTTPListen: httpAddr, SnapshotEvery: 5})
	cl := clientPeer(t, addr)
	submit := func(n int) {
		for i := range n {
			cl.send("submit", "req", strconv.Itoa(i), "task_type", "t")
			cl.expect("submitted")
		}
	}
	submit(6)
	require.Eventually(t, func() bool {
		return strings.Contains(httpGet(t, "http://"+httpAddr+"/metrics"), "apollo11_snapshot_failing 1\n")
	}, 10*time.Second, 20*time.Millisecond)
	body := httpGet(t, "http://"+httpAddr+"/metrics")
	assert.NotContains(t, body, "apollo11_snapshot_failures_total 0\n")
	assert.Equal(t, "ok\n", httpGet(t, "http://"+httpAddr+"/healthz"))

	ffs.Heal()
	submit(6)
	require.Eventually(t, func() bool {
		return strings.Contains(httpGet(t, "http://"+httpAddr+"/metrics"), "apollo11_snapshot_failing 0\n")
	}, 10*time.Second, 20*time.Millisecond)
}
