package core

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/wire"
)

// Epochs: 0 in a new data dir, then one more at each start; the first
// run's versions are 1, 2, 3; a later run's start above every earlier
// one, and replay takes the jump.
func TestEpoch_VersionsJumpAtEachStart(t *testing.T) {
	h := newHarness(t)
	require.NoError(t, h.c.BeginEpoch(0))
	assert.Equal(t, uint64(0), h.c.Epoch())
	cl := h.client()
	id := h.submit(cl, "task_type", "x")
	for want := uint64(1); want <= 3; want++ {
		ex := h.executor("e1", "x", 1)
		_, v := h.task(ex)
		require.Equal(t, want, v)
		h.send(ex, "bye") // back to pending, no attempt used
		h.expect(ex, "bye_ack")
	}
	h.restart()
	assert.Equal(t, uint64(1), h.c.Epoch())
	ex := h.executor("e1", "x", 1)
	got, v := h.task(ex)
	require.Equal(t, id, got)
	assert.Equal(t, uint64(1)<<32|1, v, "the second epoch's first version")
	h.send(ex, "bye")
	h.expect(ex, "bye_ack")
	ex = h.executor("e1", "x", 1)
	_, v = h.task(ex)
	assert.Equal(t, uint64(1)<<32|2, v, "then one more within the epoch")
	h.checkReplay()

	h.restart()
	assert.Equal(t, uint64(2), h.c.Epoch())
	h.checkReplay()
}

// A snapshot keeps the epoch; one written before epochs (no field) reads
// as none begun.
func TestEpoch_SnapshotKeepsIt(t *testing.T) {
	h := newHarness(t)
	require.NoError(t, h.c.BeginEpoch(0))
	h.restart()
	h.restart()
	require.Equal(t, uint64(2), h.c.Epoch())
	entries := snapshotEntries(t, h.c)
	h.restartFrom(entries, len(h.fx.records))
	assert.Equal(t, uint64(3), h.c.Epoch())

	// The meta entry as written before epochs: its last field missing.
	var meta record
	require.NoError(t, decodeRecord(entries[0], &meta))
	require.Equal(t, snapMeta, meta.kind)
	old := entries[0][:len(entries[0])-1]
	require.NoError(t, decodeRecord(old, &meta))
	assert.Equal(t, uint64(0), meta.epoch)
	c := h.loaded([][]byte{old}, nil)
	c.Recovered()
	require.NoError(t, c.BeginEpoch(0))
	assert.Equal(t, uint64(0), c.Epoch())
}

// Replay refuses an epoch that does not move on: versions could repeat.
func TestEpoch_ReplayRefusesGoingBack(t *testing.T) {
	h := newHarness(t)
	require.NoError(t, h.c.BeginEpoch(0))
	require.NoError(t, h.c.BeginEpoch(0))
	c := h.replayed()
	for _, e := range []uint64{0, 1} {
		err := c.ReplayRecord(appendRecord(nil, &record{kind: recEpoch, epoch: e}))
		require.ErrorIs(t, err, ErrCorrupt, "epoch %d after 1", e)
	}
	require.NoError(t, c.ReplayRecord(appendRecord(nil, &record{kind: recEpoch, epoch: 5})))
	require.Error(t, c.ReplayRecord(appendRecord(nil, &record{kind: recEpoch, epoch: maxEpoch + 1})))
	c.nextEpoch = maxEpoch + 1
	require.Error(t, c.BeginEpoch(0), "every epoch used")
}

// A dispatch lost in a crash (its record never reached the disk, though
// its task frame did): after the restart its token names no dispatch, so
// the executor's running= entry gets a cancel and its result is stale;
// the task runs again under a version never handed out before.
func TestEpoch_LostDispatchRefused(t *testing.T) {
	h := newHarness(t)
	require.NoError(t, h.c.BeginEpoch(0))
	cl := h.client()
	ex := h.executor("e1", "x", 2)
	id := h.submit(cl, "task_type", "x")
	_, lost := h.task(ex)
	require.Equal(t, uint64(1), lost)
	require.Equal(t, uint64(len(h.fx.records)), h.recordOf(recDispatch, id))
	h.fx.records = h.fx.records[:len(h.fx.records)-1] // the crash lost it
	h.restart()

	ex = h.executor("e1", "x", 2)
	got, v := h.task(ex) // pending again, so dispatched at once
	require.Equal(t, id, got)
	assert.Equal(t, uint64(1)<<32|1, v)
	assert.NotEqual(t, lost, v)
	token := itoa(id) + "." + itoa(lost)
	h.heartbeat(ex, token)
	assert.Equal(t, itoa(lost), h.expect(ex, "cancel").Value("version"))
	h.send(ex, "started", "task_id", itoa(id), "version", itoa(lost))
	h.refused(ex, id, lost, wire.ReasonStale, "succeeded")
	h.start(ex, id, v)
	h.accepted(ex, id, v, "succeeded")
	h.checkReplay()
}

// Records --recover-truncate dropped may have begun epochs: as many are
// skipped, so that no version of theirs comes again; never past the last.
func TestEpoch_LostRecordsSkipEpochs(t *testing.T) {
	h := newHarness(t)
	require.NoError(t, h.c.BeginEpoch(0))
	require.NoError(t, h.c.BeginEpoch(3))
	assert.Equal(t, uint64(4), h.c.Epoch(), "epochs 1 to 3 may have been lost")
	require.NoError(t, h.c.BeginEpoch(1<<48))
	assert.Equal(t, uint64(maxEpoch), h.c.Epoch())
	h.checkReplay()
	require.Error(t, h.c.BeginEpoch(0), "every epoch used")
}
