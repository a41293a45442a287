package maincontrol

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/cluster"
	"github.com/apollo11/apollo11/internal/patience"
)

// A leader ahead of the commit puts its Raft snapshot off. Once the commit
// catches up, the snapshot is taken from the frozen live core: no shadow
// core, so no second copy of the state.
func TestCluster_LeaderSnapshotWaitsForTheCommitNotAShadow(t *testing.T) {
	servers := startMembers(t, 3)
	l := leaderOf(t, servers)
	l.mu.Lock()
	l.cl.snap.wait = patience.Scale(time.Minute) // the commit surely comes first
	l.mu.Unlock()
	cl := dialLeadSnap(t, l.cl.id)
	confirmed := submitKeyed(t, cl, 5)
	hold, heldID := holdASubmit(t, l, cl, confirmed[len(confirmed)-1])

	require.ErrorIs(t, l.cl.node.Raft().Snapshot().Error(), cluster.ErrSnapshotLater, "put off while ahead")
	l.mu.Lock()
	hold.release(l)
	l.mu.Unlock()
	assert.Equal(t, strconv.FormatUint(heldID, 10), cl.expect("submitted").Value("task_id"))

	rc := awaitRaftSnapshot(t, l)
	fresh, err := l.newCore()
	require.NoError(t, err)
	_, err = loadStream(fresh, rc)
	require.NoError(t, rc.Close())
	require.NoError(t, err)
	for _, id := range append(confirmed, heldID) {
		_, ok := fresh.Task(id)
		assert.True(t, ok, "committed task %d is in the snapshot", id)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	assert.Zero(t, l.cl.snap.shadows, "no shadow core built")
	assert.Equal(t, uint64(1), l.cl.snap.frozen, "the frozen live core written")
	assert.Positive(t, l.cl.snap.putOff)
}
