package reliability_test

import (
	"context"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/client"
	"github.com/apollo11/apollo11/maincontrol/maincontroltest"
)

// fixtureRuns are the fixture's runs, defined once for both upgrade tests.
var fixtureRuns = maincontroltest.RunsV2Fixture

// TestMaincontrol_Kill9AfterRunsUpgrade starts the binary on a copy of
// the data dir whose runs live in format 2 manifests, then kills it with
// SIGKILL while new runs start and advance, a snapshot every 2 records,
// round after round: after every restart the old runs are there as they
// were, with their step tasks; their keys still return them; nothing
// confirmed since is lost; no run id or task id of theirs is given again.
func TestMaincontrol_Kill9AfterRunsUpgrade(t *testing.T) {
	if testing.Short() {
		t.Skip("kill rounds take a while")
	}
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(dir, os.DirFS("../maincontrol/testdata/datadir-runs-v2")))
	flags := []string{"--snapshot-every", "2", "--retention-max", "100000000"}
	l := newLedger()
	rl := newRunLedger(l)
	rng := rand.New(rand.NewPCG(28, 3))
	var oldTasks map[uint64]bool
	for round := 0; ; round++ {
		mc := startMain(t, dir, flags...)
		waitProbe(t, mc.Addr, nil, 30*time.Second)
		tasks := checkFixtureRuns(t, mc.Addr)
		if oldTasks == nil {
			oldTasks = tasks
		}
		assert.Equal(t, oldTasks, tasks, "the old runs' step tasks")
		l.verify(t, mc.Addr, nil, false)
		rl.verify(t, mc.Addr, false)
		if t.Failed() {
			t.FailNow()
		}
		if round == 3 {
			mc.Kill()
			break
		}
		loadRunsAndKill(t, mc, l, rl, round, rng.Uint64(), time.Duration(300+rng.IntN(700))*time.Millisecond)
	}
	rl.mu.Lock()
	defer rl.mu.Unlock()
	require.NotEmpty(t, rl.runs)
	for id, r := range rl.runs {
		assert.Greater(t, id, uint64(len(fixtureRuns)), "a run id of the old release was given again")
		for _, tid := range r.tasks {
			assert.False(t, oldTasks[tid], "task id %d of an old run was given again to run %d", tid, id)
		}
	}
}

// checkFixtureRuns checks every run of the fixture, resubmits its first
// key (which must return run 1, making nothing), and returns the old
// runs' step task ids.
func checkFixtureRuns(t *testing.T, addr string) map[uint64]bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := client.Dial(ctx, addr, client.Options{Logger: quiet})
	require.NoError(t, err)
	defer c.Close()
	tasks := map[uint64]bool{}
	for id, want := range fixtureRuns {
		got, err := c.RunQuery(ctx, client.RunRef{ID: id})
		require.NoError(t, err, "run %d", id)
		assert.Equal(t, want.State, got.State, "run %d", id)
		assert.Equal(t, want.Key, got.Key, "run %d", id)
		assert.Len(t, got.Steps, 2, "run %d", id)
		for _, s := range got.Steps {
			tasks[s.TaskID] = true
		}
	}
	dup, err := c.RunSubmit(ctx, client.RunRequest{Name: "nightly", Key: "nightly-1",
		Steps: []client.RunStepRequest{{ID: "fetch", Type: "ok"}}})
	require.NoError(t, err)
	assert.Equal(t, client.RunSubmitted{ID: 1, TaskIDs: []uint64{1, 2}, Duplicate: true}, dup)
	return tasks
}
