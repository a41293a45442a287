package maincontrol_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/client"
	"github.com/apollo11/apollo11/executor"
	"github.com/apollo11/apollo11/maincontrol"
	"github.com/apollo11/apollo11/maincontrol/maincontroltest"
)

// fixtureTask is one task of testdata/datadir-v1, as its generator
// (testdata/genfixture -layout v1) left it when it killed the main control.
type fixtureTask struct {
	id    uint64
	typ   string
	state string
	key   string
	out   map[string]string
	err   string
	trace string
}

// fixtureTasks: 1-16 are in the snapshot, 17-21 only in the log after it.
var fixtureTasks = func() []fixtureTask {
	ts := []fixtureTask{
		{id: 1, typ: "ok", state: "succeeded", out: map[string]string{"n": "1"}},
		{id: 2, typ: "bad", state: "failed", err: "bad on purpose"},
		{id: 3, typ: "nobody", state: "pending", key: "key-pending-1"},
		{id: 4, typ: "nobody", state: "waiting"}, // on 3
		{id: 5, typ: "ok", state: "succeeded", key: "key-ended-1", out: map[string]string{"n": "5"}},
		{id: 6, typ: "nobody", state: "cancelled", trace: "trace-6"},
	}
	for id := uint64(7); id <= 16; id++ {
		ts = append(ts, fixtureTask{id: id, typ: "ok", state: "succeeded"})
	}
	return append(ts,
		fixtureTask{id: 17, typ: "ok", state: "succeeded", out: map[string]string{"n": "17"}},
		fixtureTask{id: 18, typ: "nobody", state: "pending", key: "key-pending-2"},
		fixtureTask{id: 19, typ: "nobody", state: "waiting"}, // on 18 and 17
		fixtureTask{id: 20, typ: "hold", state: "running"},   // its executor was cut off by the kill
		fixtureTask{id: 21, typ: "nobody", state: "cancelled"},
	)
}()

// TestUpgrade_DataDirV1 starts this tree's main control on a copy of a
// data dir that the release before format versions wrote (and was killed
// on), so "stop, replace the binary, start" is tested: every task, key and
// the shared state come back, waiting tasks still wait on their parents,
// new tasks get fresh ids, and what the new binary writes loads again.
func TestUpgrade_DataDirV1(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(dir, os.DirFS("testdata/datadir-v1")))
	cfg := maincontrol.Config{DataDir: dir, Logger: testLogger()}
	addr, stop := maincontroltest.Start(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := client.Dial(ctx, addr, client.Options{})
	require.NoError(t, err)
	defer c.Close()

	for _, want := range fixtureTasks {
		got, err := c.Query(ctx, want.id)
		require.NoError(t, err, "task %d", want.id)
		assert.Equal(t, want.state, got.State, "task %d", want.id)
		assert.Equal(t, want.typ, got.Type, "task %d", want.id)
		assert.Equal(t, want.err, got.Error, "task %d", want.id)
		if want.out != nil {
			assert.Equal(t, want.out, got.Out, "task %d", want.id)
		}
		if want.trace != "" {
			assert.Equal(t, want.trace, got.TraceID, "task %d", want.id)
		}
		if want.state == "running" {
			assert.Equal(t, "fixture-worker", got.ExecutorID, "task %d", want.id)
		}
	}
	st, err := c.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, map[string]uint64{"waiting": 2, "pending": 2, "dispatched": 0, "running": 1, "retrying": 0,
		"succeeded": 13, "failed": 1, "cancelled": 2}, st.Tasks)
	state, ver, err := c.StateGet(ctx)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"color": "blue", "count": "13"}, state)
	assert.Equal(t, uint64(13), ver)

	for _, tk := range fixtureTasks {
		if tk.key == "" {
			continue
		}
		s, err := c.Submit(ctx, client.SubmitRequest{Type: tk.typ, Key: tk.key})
		require.NoError(t, err)
		assert.Equal(t, client.Submitted{ID: tk.id, Duplicate: true}, s, "key %s", tk.key)
	}
	s, err := c.Submit(ctx, client.SubmitRequest{Type: "later"})
	require.NoError(t, err)
	assert.Equal(t, client.Submitted{ID: 22}, s, "a fresh id after every id the old binary gave")

	// The parents of the waiting tasks run; the waiting ones follow.
	ex, err := executor.New(executor.Config{Addr: addr, ID: "upgrade-worker", Logger: testLogger(),
		Handlers: map[string]executor.Handler{"nobody": executor.HandlerFunc(
			func(context.Context, *executor.Task) (executor.Result, error) { return executor.Result{}, nil })}})
	require.NoError(t, err)
	exCtx, exStop := context.WithCancel(ctx)
	exDone := make(chan error, 1)
	go func() { exDone <- ex.Run(exCtx) }()
	for _, id := range []uint64{3, 4, 18, 19} {
		for {
			got, err := c.Query(ctx, id)
			require.NoError(t, err)
			if got.State == "succeeded" {
				break
			}
			require.Contains(t, []string{"waiting", "pending", "dispatched", "running"}, got.State, "task %d", id)
			time.Sleep(10 * time.Millisecond)
		}
	}
	exStop()
	require.NoError(t, <-exDone)
	c.Close()
	stop()

	// What the new binary wrote, over the old files, loads again.
	addr, _ = maincontroltest.Start(t, cfg)
	c, err = client.Dial(ctx, addr, client.Options{})
	require.NoError(t, err)
	defer c.Close()
	for _, id := range []uint64{3, 4, 18, 19, 1, 17} {
		got, err := c.Query(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, "succeeded", got.State, "task %d", id)
	}
	got, err := c.Query(ctx, 22)
	require.NoError(t, err)
	assert.Equal(t, "pending", got.State)
	s, err = c.Submit(ctx, client.SubmitRequest{Type: "later"})
	require.NoError(t, err)
	assert.Greater(t, s.ID, uint64(22))
}
