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
)

// fixtureMaxID is the last task id in maincontrol/testdata/datadir-v1.
const fixtureMaxID = 21

// TestMaincontrol_Kill9AfterUpgrade starts the binary on a copy of the
// data dir that the release before format versions wrote
// (maincontrol/testdata/datadir-v1), then kills it with SIGKILL under
// load, round after round, on that dir: after every restart the old
// release's tasks and shared state are there, nothing confirmed since is
// lost, and no id the old release gave is handed out again.
func TestMaincontrol_Kill9AfterUpgrade(t *testing.T) {
	if testing.Short() {
		t.Skip("kill rounds take a while")
	}
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(dir, os.DirFS("../maincontrol/testdata/datadir-v1")))
	flags := []string{"--snapshot-every", "50"}
	l := newLedger()
	rng := rand.New(rand.NewPCG(26, 3))
	for round := 0; ; round++ {
		mc := startMain(t, dir, flags...)
		waitProbe(t, mc.Addr, nil, 30*time.Second)
		checkFixture(t, mc.Addr)
		l.verify(t, mc.Addr, nil, false)
		if t.Failed() {
			t.FailNow()
		}
		if round == 3 {
			mc.Kill()
			break
		}
		loadAndKill(t, mc, l, round, rng.Uint64(), time.Duration(100+rng.IntN(400))*time.Millisecond)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	assert.NotEmpty(t, l.submitted)
	for id := range l.submitted {
		assert.Greater(t, id, uint64(fixtureMaxID), "an id of the old release was given again")
	}
}

// checkFixture checks what the old release confirmed in the fixture is
// still there (the task it left running is not checked: it goes back to
// the queue when its executor does not come back).
func checkFixture(t *testing.T, addr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := client.Dial(ctx, addr, client.Options{Logger: quiet})
	require.NoError(t, err)
	defer c.Close()
	for id, want := range map[uint64]string{1: "succeeded", 2: "failed", 3: "pending", 4: "waiting", 5: "succeeded",
		6: "cancelled", 16: "succeeded", 17: "succeeded", 18: "pending", 19: "waiting", 21: "cancelled"} {
		st, err := c.Query(ctx, id)
		require.NoError(t, err, "task %d", id)
		assert.Equal(t, want, st.State, "task %d", id)
	}
	state, _, err := c.StateGet(ctx)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"color": "blue", "count": "13"}, state)
}
