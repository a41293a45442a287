package cluster

import (
	"fmt"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// startOne starts a cluster of one member, which elects itself.
func startOne(t *testing.T) (*Node, *listApp) {
	t.Helper()
	m := Member{ID: "client-0:1", Raft: freeAddr(t), Voter: true}
	app := &listApp{}
	n, err := Start(Config{ID: m.ID, RaftAddr: m.Raft, Members: []Member{m}, Dir: filepath.Join(t.TempDir(), "raft"),
		Logger: quiet()}, app)
	require.NoError(t, err)
	t.Cleanup(func() { _ = n.Close() })
	waitFor(t, "a leader", n.IsLeader)
	return n, app
}

// commit appends records as one leader and waits until they are applied.
func commit(t *testing.T, n *Node, recs ...string) {
	t.Helper()
	durable, failed := make(chan uint64, 100), make(chan error, 100)
	p := NewProposer(n.Raft(), func(lsn uint64) { durable <- lsn }, func(_ uint64, err error) { failed <- err })
	defer p.Close()
	p.Lead(Origin{ID: n.ID(), Term: n.Term()})
	var last uint64
	for _, r := range recs {
		last = p.Append([]byte(r))
	}
	awaitDurable(t, durable, failed, last)
}

// A snapshot taken just after a barrier has a Raft index above the last
// command. It still holds the state at that command, so a rebuild uses
// it, and needs none of the log head compacted before it.
func TestNode_CommittedUsesASnapshotTakenPastTheLastCommand(t *testing.T) {
	n, app := startOne(t)
	var recs []string
	for i := range 10 {
		recs = append(recs, fmt.Sprint("r", i))
	}
	commit(t, n, recs...)
	upto := app.applied()
	require.NoError(t, n.Barrier(5*time.Second))
	require.NoError(t, n.Raft().Snapshot().Error())
	metas, err := n.snaps.List()
	require.NoError(t, err)
	require.Greater(t, metas[0].Index, upto, "the snapshot counts the barrier")
	// The log head goes, as Raft compacts it after a snapshot.
	require.NoError(t, n.stores.Log.DeleteRange(1, upto))

	var rebuilt listApp
	require.NoError(t, n.Committed(upto, rebuilt.load, rebuilt.Apply))
	assert.Equal(t, recs, rebuilt.list())
}

// A snapshot taken while a rebuild reads the log may compact the entries
// it needs. The rebuild starts over through load, from the new snapshot.
func TestNode_CommittedStartsOverWhenTheLogIsCompactedMeanwhile(t *testing.T) {
	n, app := startOne(t)
	commit(t, n, "a", "b", "c")
	require.NoError(t, n.Raft().Snapshot().Error())
	commit(t, n, "d", "e")
	upto := app.applied()

	var rebuilt listApp
	loads := 0
	load := func(r io.Reader) (uint64, error) {
		loads++
		if loads == 1 {
			// Raft snapshots and compacts while the first attempt runs.
			require.NoError(t, n.Raft().Snapshot().Error())
			metas, err := n.snaps.List()
			require.NoError(t, err)
			require.NoError(t, n.stores.Log.DeleteRange(1, metas[0].Index))
		}
		return rebuilt.load(r)
	}
	require.NoError(t, n.Committed(upto, load, rebuilt.Apply))
	assert.Equal(t, 2, loads, "one load per attempt")
	assert.Equal(t, []string{"a", "b", "c", "d", "e"}, rebuilt.list())
}
