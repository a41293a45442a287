package reliability_test

import (
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestMaincontrol_Kill9DuringRequeue kills the main control with SIGKILL
// while a client pipelines requeues of cancelled tasks (protocol 8.3),
// restarts it on the same data dir and checks that every requeue it
// confirmed survived: the task is pending, with the round's reason and a
// version at least the confirmed one. Each round first cancels them all
// again with cancel_where, which must be whole after the kill too.
func TestMaincontrol_Kill9DuringRequeue(t *testing.T) {
	if testing.Short() {
		t.Skip("kill rounds take a while")
	}
	sc := currentScale()
	rounds := max(2, sc.killRounds/2)
	const tasks = 300
	fig := figures.add(14, "kill -9 of the main control during requeues", "rounds")
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(14, uint64(rounds)))

	mc := startMain(t, dir)
	p, err := dialClient(mc.Addr, nil)
	require.NoError(t, err)
	for i := range tasks {
		require.NoError(t, p.write("submit", "req", strconv.Itoa(i), "task_type", "nobody"))
	}
	require.NoError(t, p.flush())
	for range tasks {
		m, err := p.recv(30 * time.Second)
		require.NoError(t, err)
		require.Equal(t, "submitted", m.Type(), "%s", m)
	}
	fig.tasks, fig.confirmed = tasks, tasks
	p.close()

	var killedAt time.Time
	for round := range rounds {
		if round > 0 {
			mc = startMain(t, dir)
			fig.recovered(time.Since(killedAt))
		}
		waitProbe(t, mc.Addr, nil, 30*time.Second)
		p, err := dialClient(mc.Addr, nil)
		require.NoError(t, err)
		require.NoError(t, p.send("cancel_where", "req", "c", "task_type", "nobody"))
		m, err := p.recv(30 * time.Second)
		require.NoError(t, err)
		require.Equal(t, "matched", m.Type(), "%s", m)

		reason := "round " + strconv.Itoa(round)
		for id := 1; id <= tasks; id++ {
			require.NoError(t, p.write("requeue", "req", strconv.Itoa(id), "task_id", strconv.Itoa(id), "reason", reason))
		}
		require.NoError(t, p.flush())
		confirmed := map[uint64]uint64{} // id -> version confirmed
		stopAt := 1 + rng.IntN(tasks-1)
		for len(confirmed) < stopAt {
			m, err := p.recv(30 * time.Second)
			require.NoError(t, err)
			require.Equal(t, "requeued", m.Type(), "%s", m)
			id, _ := m.Uint("task_id")
			ver, _ := m.Uint("version")
			confirmed[id] = ver
		}
		mc.Kill()
		killedAt = time.Now()
		fig.injected++
		p.close()

		mc = startMain(t, dir)
		fig.recovered(time.Since(killedAt))
		q, err := dialClient(mc.Addr, nil)
		require.NoError(t, err)
		for id, ver := range confirmed {
			require.NoError(t, q.send("query", "req", "q", "task_id", strconv.FormatUint(id, 10)))
			m, err := q.recv(30 * time.Second)
			require.NoError(t, err)
			got, _ := m.Uint("version")
			if m.Value("state") != "pending" || m.Value("requeue_reason") != reason || got < ver {
				fig.lost++
				t.Errorf("round %d: confirmed requeue of task %d (version %d) lost: %s", round, id, ver, m)
			}
		}
		q.close()
		fig.note("round %d: %d requeues confirmed before the kill", round, len(confirmed))
		mc.Kill()
		killedAt = time.Now()
		if t.Failed() {
			t.FailNow()
		}
	}
}
