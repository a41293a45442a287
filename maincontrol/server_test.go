package maincontrol_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/apollo11/apollo11/maincontrol"
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
