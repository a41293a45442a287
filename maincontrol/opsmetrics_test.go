package maincontrol_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/apollo11/apollo11/maincontrol"
)

// The operator's changes show in /metrics: paused types, state repairs
// (conflicts too) and executors' type changes.
func TestServer_OpsMetrics(t *testing.T) {
	httpAddr := freeAddr(t)
	addr := startServer(t, maincontrol.Config{DataDir: t.TempDir(), HTTPListen: httpAddr})
	cl := clientPeer(t, addr)
	ex := executorPeer(t, addr, "e1", "echo", 1)
	cl.send("pause", "req", "p", "task_type", "echo")
	cl.expect("paused")
	cl.send("state_set", "req", "s", "key", "k", "value", "v")
	cl.expect("state_changed")
	cl.send("state_del", "req", "d", "key", "k", "state_version", "0")
	cl.expect("error")
	ex.send("types", "req", "t", "add", "sleep")
	ex.expect("types_ok")

	body := httpGet(t, "http://"+httpAddr+"/metrics")
	assert.Contains(t, body, "apollo11_task_types_paused 1\n")
	assert.Contains(t, body, "apollo11_type_pauses_total 1\n")
	assert.Contains(t, body, "apollo11_state_sets_total 1\n")
	assert.Contains(t, body, "apollo11_state_conflicts_total 1\n")
	assert.Contains(t, body, "apollo11_executor_type_changes_total 1\n")
}
