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
