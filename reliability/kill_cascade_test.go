package reliability_test

import (
	"context"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestMaincontrol_Kill9DuringDependencyCascade kills the main control
// while a task's end fans out to thousands of waiting dependents (released
// when it succeeded, cancelled down a chain when it was cancelled), then
// restarts it on the same data dir: every task must still end. The end
// and each dependent's move are separate records, and a kill between them
// once left the dependents waiting for good. Whether a round's kill lands
// in that window depends on timing; a round that misses it passes either
// way.
func TestMaincontrol_Kill9DuringDependencyCascade(t *testing.T) {
	if testing.Short() {
		t.Skip("kill rounds take a while")
	}
	const fanout = 20000
	rng := rand.New(rand.NewPCG(11, 7))
	for round, cancelHead := range []bool{false, true, false, true} {
		dir := t.TempDir()
		mc := startMain(t, dir)
		waitProbe(t, mc.Addr, nil, 30*time.Second)
		cl, err := dialClient(mc.Addr, nil)
		require.NoError(t, err)
		head := []string{"req", "head", "task_type", "work"}
		if cancelHead {
			head = append(head, "delay_ms", "600000")
		}
		require.NoError(t, cl.send("submit", head...))
		m, err := cl.recv(10 * time.Second)
		require.NoError(t, err)
		require.Equal(t, "submitted", m.Type(), "%s", m)
		headID := m.Value("task_id")
		first, err := strconv.ParseUint(headID, 10, 64)
		require.NoError(t, err)
		for i := range uint64(fanout) {
			// A fan-out from the head, or a chain below it: ids are
			// handed out in order, so the chain is pipelined too.
			dep := headID
			if cancelHead {
				dep = itoa(first + i)
			}
			require.NoError(t, cl.write("submit", "req", itoa(i), "task_type", "work", "depends_on", dep))
		}
		require.NoError(t, cl.flush())
		for i := range uint64(fanout) {
			m, err := cl.recv(10 * time.Second)
			require.NoError(t, err)
			require.Equal(t, "submitted", m.Type(), "%s", m)
			require.Equal(t, itoa(first+1+i), m.Value("task_id"))
		}

		if cancelHead {
			require.NoError(t, cl.send("cancel", "req", "c", "task_id", headID))
		} else {
			ex, _, err := dialExecutor(mc.Addr, "ex-head", "work", 1, nil)
			require.NoError(t, err)
			m, err := ex.recv(10 * time.Second)
			require.NoError(t, err)
			require.Equal(t, "task", m.Type(), "%s", m)
			require.Equal(t, headID, m.Value("task_id"), "only the head is pending")
			require.NoError(t, ex.write("started", "task_id", headID, "version", m.Value("version")))
			require.NoError(t, ex.write("result", "task_id", headID, "version", m.Value("version"), "status", "succeeded"))
			require.NoError(t, ex.flush())
			t.Cleanup(ex.close)
		}
		time.Sleep(time.Duration(rng.IntN(30)) * time.Millisecond)
		mc.Kill()
		cl.close()

		mc = startMain(t, dir)
		waitProbe(t, mc.Addr, nil, 30*time.Second)
		if cancelHead {
			// The kill may have come before the cancel was durable: it
			// was never confirmed, so the client sends it again, as any
			// client whose request got no reply would. Without that the
			// head waited out its 10-minute delay and the round failed.
			cl, err := dialClient(mc.Addr, nil)
			require.NoError(t, err)
			require.NoError(t, cl.send("cancel", "req", "c2", "task_id", headID))
			m, err := cl.recv(10 * time.Second)
			require.NoError(t, err)
			if m.Type() == "cancelled" {
				t.Logf("round %d: the kill came before the first cancel was durable", round)
			} else {
				require.Equal(t, "illegal_transition", m.Value("code"), "%s", m) // the first one was durable
			}
			cl.close()
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); runExecutor(ctx, mc.Addr, "ex-drain", newLedger(), 1, false) }()
		waitDrained(t, mc.Addr, nil, 60*time.Second)
		st := stats(t, mc.Addr, nil)
		t.Logf("round %d (cancel=%v): %v", round, cancelHead, st.Tasks)
		cancel()
		<-done
		mc.Kill()
	}
}
