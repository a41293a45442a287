package maincontrol_test

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/internal/syncbuf"
	"github.com/apollo11/apollo11/maincontrol"
	"github.com/apollo11/apollo11/maincontrol/core"
	"github.com/apollo11/apollo11/maincontrol/maincontroltest"
)

// stateCap is the cap of these tests: "k" with a value of fillCap bytes
// fills it exactly.
const (
	stateCap = 1000
	fillCap  = stateCap - 1 - core.StateKeyOverhead
)

// runResult submits a task with wait=true, has ex run it to a succeeded
// result with kv, and returns the result_ack and the client's done.
func runResult(t *testing.T, cl, ex *rawPeer, kv ...string) (ack, done map[string]string) {
	t.Helper()
	cl.send("submit", "req", "s", "task_type", "t", "wait", "true")
	id := cl.expect("submitted").Value("task_id")
	task := ex.expect("task")
	require.Equal(t, id, task.Value("task_id"))
	ver := task.Value("version")
	ex.send("started", "task_id", id, "version", ver)
	ex.send("result", append([]string{"task_id", id, "version", ver, "status", "succeeded"}, kv...)...)
	a, d := ex.expect("result_ack"), cl.expect("done")
	ack, done = map[string]string{}, map[string]string{}
	for _, f := range a.Fields {
		ack[f.Key] = f.Value
	}
	for _, f := range d.Fields {
		done[f.Key] = f.Value
	}
	return ack, done
}

// Over a real socket: a result that would take the shared state past
// --max-state-bytes is refused illegal_value and its task fails, naming the
// first key past the cap; the state, its size (stats, metrics) and
// state_version stay as they were.
func TestServer_StateCapRefusesGrowth(t *testing.T) {
	httpAddr := freeAddr(t)
	addr := startServer(t, maincontrol.Config{HTTPListen: httpAddr, Core: core.Config{MaxStateBytes: stateCap}})
	cl := clientPeer(t, addr)
	ex := executorPeer(t, addr, "e1", "t", 1)

	ack, done := runResult(t, cl, ex, "state.set.k", strings.Repeat("v", fillCap))
	require.Equal(t, "true", ack["accepted"], "exactly at the cap: %v", ack)
	assert.Equal(t, "succeeded", done["state"])

	ack, done = runResult(t, cl, ex, "state.set.k", "short", "state.set.big", strings.Repeat("v", 2*stateCap), "out.o", "1")
	assert.Equal(t, "false", ack["accepted"])
	assert.Equal(t, "illegal_value", ack["reason"])
	assert.Equal(t, "failed", done["state"])
	assert.Equal(t, "illegal_value state.set.big", done["error"])
	assert.NotContains(t, done, "out.o", "nothing of it applies")

	cl.send("state_get", "req", "g")
	st := cl.expect("state")
	assert.Equal(t, "1", st.Value("state_version"))
	assert.Equal(t, strings.Repeat("v", fillCap), st.Value("state.k"), "nothing of it applies")
	assert.False(t, st.Has("state.big"))
	cl.send("stats", "req", "s")
	assert.Equal(t, "1000", cl.expect("stats").Value("state_bytes"))
	assert.Contains(t, httpGet(t, "http://"+httpAddr+"/metrics"), "\napollo11_state_bytes 1000\n")

	ack, _ = runResult(t, cl, ex, "state.set.k", "short")
	assert.Equal(t, "true", ack["accepted"], "a shrink at the cap: %v", ack)
	cl.send("stats", "req", "s")
	assert.Equal(t, "85", cl.expect("stats").Value("state_bytes"), `"k" + 20 (the least a value counts) + 64`)
}

// A cap lowered across a restart keeps the state it finds, warns, and
// refuses only growth.
func TestServer_StateCapLoweredAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	addr, stop := maincontroltest.Start(t, maincontrol.Config{DataDir: dir, Logger: testLogger(), Core: core.Config{MaxStateBytes: 3 * stateCap}})
	cl := clientPeer(t, addr)
	ex := executorPeer(t, addr, "e1", "t", 1)
	ack, _ := runResult(t, cl, ex, "state.set.k", strings.Repeat("v", fillCap), "state.set.j", strings.Repeat("v", fillCap), "state.set.n", "1")
	require.Equal(t, "true", ack["accepted"], "%v", ack)
	stop()

	var logs syncbuf.Buffer
	addr, _ = maincontroltest.Start(t, maincontrol.Config{DataDir: dir, Core: core.Config{MaxStateBytes: stateCap},
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	assert.Contains(t, logs.String(), "shared state is larger than --max-state-bytes")
	cl = clientPeer(t, addr)
	ex = executorPeer(t, addr, "e1", "t", 1)
	cl.send("stats", "req", "s")
	assert.Equal(t, "2085", cl.expect("stats").Value("state_bytes"))
	ack, _ = runResult(t, cl, ex, "state.add.n", "1")
	assert.Equal(t, "true", ack["accepted"], "an add to a counter: %v", ack)
	ack, done := runResult(t, cl, ex, "state.set.new", "")
	assert.Equal(t, "false", ack["accepted"])
	assert.Equal(t, "illegal_value state.set.new", done["error"])
	cl.send("state_get", "req", "g", "keys", "k,j,n")
	st := cl.expect("state")
	assert.Len(t, st.Value("state.k"), fillCap)
	assert.Len(t, st.Value("state.j"), fillCap)
	assert.Equal(t, "2", st.Value("state.n"))
}
