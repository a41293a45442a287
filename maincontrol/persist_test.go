package maincontrol_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/apollo11/apollo11/maincontrol"
	"github.com/apollo11/apollo11/maincontrol/maincontroltest"
)

// runUntil starts a main control and returns a stop function.
func runUntil(t *testing.T, cfg maincontrol.Config) (string, func()) {
	t.Helper()
	cfg.Logger = testLogger()
	return maincontroltest.Start(t, cfg)
}

func TestServer_SurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	addr, stop := runUntil(t, maincontrol.Config{DataDir: dir, SnapshotEvery: 7})
	cl := clientPeer(t, addr)
	for i := 0; i < 25; i++ {
		cl.send("submit", "req", strconv.Itoa(i), "task_type", "t", "arg.i", strconv.Itoa(i), "key", "k"+strconv.Itoa(i))
		assert.Equal(t, strconv.Itoa(i+1), cl.expect("submitted").Value("task_id"))
	}
	cl.send("cancel", "req", "c", "task_id", "3")
	cl.expect("cancelled")
	stop()

	addr, _ = runUntil(t, maincontrol.Config{DataDir: dir})
	cl = clientPeer(t, addr)
	cl.send("query", "req", "q", "task_id", "3")
	assert.Equal(t, "cancelled", cl.expect("task_state").Value("state"))
	cl.send("stats", "req", "s")
	st := cl.expect("stats")
	assert.Equal(t, "24", st.Value("tasks.pending"))
	cl.send("submit", "req", "dup", "task_type", "t", "key", "k5")
	dup := cl.expect("submitted")
	assert.Equal(t, "6", dup.Value("task_id"))
	assert.Equal(t, "true", dup.Value("duplicate"))
	cl.send("submit", "req", "new", "task_type", "t")
	assert.Equal(t, "26", cl.expect("submitted").Value("task_id"), "ids are never reused")
	time.Sleep(10 * time.Millisecond)
}
