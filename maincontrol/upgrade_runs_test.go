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
	"github.com/apollo11/apollo11/snapshot"
)

// fixtureRuns are the fixture's runs, defined once for both upgrade tests.
var fixtureRuns = maincontroltest.RunsV2Fixture

// checkFixtureRuns queries every run of the fixture; ended holds the
// runs that have succeeded since.
func checkFixtureRuns(t *testing.T, ctx context.Context, c *client.Client, ended ...uint64) {
	t.Helper()
	for id, want := range fixtureRuns {
		got, err := c.RunQuery(ctx, client.RunRef{ID: id})
		require.NoError(t, err, "run %d", id)
		state := want.State
		for _, e := range ended {
			if e == id {
				state = "succeeded"
			}
		}
		assert.Equal(t, state, got.State, "run %d", id)
		assert.Equal(t, want.Key, got.Key, "run %d", id)
		assert.Len(t, got.Steps, 2, "run %d", id)
	}
}

// TestUpgrade_RunsInManifestHead starts this tree's main control on a
// copy of a data dir whose manifests (format 2) kept every run among
// their head entries, as releases did before runs had parts: the runs
// come back, the next snapshot moves them into runs parts, and those
// load again.
func TestUpgrade_RunsInManifestHead(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(dir, os.DirFS("testdata/datadir-runs-v2")))
	cfg := maincontrol.Config{DataDir: dir, Logger: testLogger()}
	addr, stop := maincontroltest.Start(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := client.Dial(ctx, addr, client.Options{})
	require.NoError(t, err)
	defer c.Close()
	checkFixtureRuns(t, ctx, c)
	// A snapshot where no run changed still writes every run: the
	// manifest loaded held them, no part did.
	_, err = c.Submit(ctx, client.SubmitRequest{Type: "later"})
	require.NoError(t, err)
	c.Close()
	stop()
	addr, stop = maincontroltest.Start(t, cfg)
	c, err = client.Dial(ctx, addr, client.Options{})
	require.NoError(t, err)
	defer c.Close()
	checkFixtureRuns(t, ctx, c)

	dup, err := c.RunSubmit(ctx, client.RunRequest{Name: "nightly", Key: "nightly-1",
		Steps: []client.RunStepRequest{{ID: "fetch", Type: "ok"}}})
	require.NoError(t, err)
	assert.Equal(t, client.RunSubmitted{ID: 1, TaskIDs: []uint64{1, 2}, Duplicate: true}, dup)
	fresh, err := c.RunSubmit(ctx, client.RunRequest{Name: "later", Steps: []client.RunStepRequest{{ID: "a", Type: "later"}}})
	require.NoError(t, err)
	assert.Equal(t, uint64(9), fresh.ID, "a fresh run id after every id the old binary gave")

	// The steps that waited for an executor run; their runs end.
	ex, err := executor.New(executor.Config{Addr: addr, ID: "upgrade-worker", Logger: testLogger(),
		Handlers: map[string]executor.Handler{"nobody": executor.HandlerFunc(
			func(context.Context, *executor.Task) (executor.Result, error) { return executor.Result{}, nil })}})
	require.NoError(t, err)
	exCtx, exStop := context.WithCancel(ctx)
	exDone := make(chan error, 1)
	go func() { exDone <- ex.Run(exCtx) }()
	for _, id := range []uint64{3} {
		got, err := c.WaitRun(ctx, client.RunRef{ID: id})
		require.NoError(t, err)
		require.Equal(t, "succeeded", got.State, "run %d", id)
	}
	exStop()
	require.NoError(t, <-exDone)
	c.Close()
	stop() // a graceful stop writes a snapshot

	info, err := snapshot.Inspect(snapshot.Options{Dir: dir})
	require.NoError(t, err)
	newest := info.Snapshots[len(info.Snapshots)-1]
	require.Equal(t, uint32(3), newest.Format)
	var runParts int
	for _, p := range newest.Parts {
		if p.Kind == "runs" {
			runParts++
		}
	}
	require.Positive(t, runParts, "the runs moved into parts: %+v", newest.Parts)

	addr, _ = maincontroltest.Start(t, cfg)
	c, err = client.Dial(ctx, addr, client.Options{})
	require.NoError(t, err)
	defer c.Close()
	checkFixtureRuns(t, ctx, c, 3)
	got, err := c.RunQuery(ctx, client.RunRef{Key: "nightly-1"})
	require.NoError(t, err)
	assert.Equal(t, uint64(1), got.ID)
	got, err = c.RunQuery(ctx, client.RunRef{ID: 9})
	require.NoError(t, err)
	assert.Equal(t, "running", got.State)
}
