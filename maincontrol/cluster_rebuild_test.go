package maincontrol

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/internal/patience"
)

// A snapshot taken just after a barrier has a Raft index above the last
// command, and the log head before it is compacted. A leader stepping down
// then rebuilds from that snapshot, with every confirmed task.
func TestCluster_StepdownRebuildsFromASnapshotPastTheLastCommand(t *testing.T) {
	servers := startMembersWith(t, 3, Config{RaftTrailingLogs: 1})
	l := leaderOf(t, servers)
	deadline := time.Now().Add(patience.Scale(20 * time.Second))
	cl := dialLeadSnap(t, l.cl.id)
	confirmed := submitKeyed(t, cl, 5)
	require.NoError(t, l.cl.node.Barrier(patience.Scale(5*time.Second)))
	f := l.cl.node.Raft().Snapshot()
	require.NoError(t, f.Error())
	meta, rc, err := f.Open()
	require.NoError(t, err)
	require.NoError(t, rc.Close())
	l.mu.Lock()
	upto, before := l.cl.applied, l.core
	l.mu.Unlock()
	require.Greater(t, meta.Index, upto, "the snapshot counts the barrier")

	require.NoError(t, l.cl.node.Transfer(""))
	for {
		require.True(t, time.Now().Before(deadline), "the leader never stepped down")
		l.mu.Lock()
		down := l.cl.leadTerm == 0 && !l.cl.lead.Load() && l.core.Role().String() != "leader"
		l.mu.Unlock()
		if down {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	select {
	case err := <-l.cl.fatal:
		t.Fatalf("the stepdown could not rebuild: %v", err)
	default:
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	require.True(t, before != l.core, "the core was rebuilt")
	for _, id := range confirmed {
		_, ok := l.core.Task(id)
		assert.True(t, ok, "confirmed task %d is in the rebuilt state", id)
	}
}
