package core

import (
	"context"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/snapshot"
)

// incrCheck writes the property test's state as incremental snapshots
// into a real data dir, each against the one before, and loads every one
// back into a fresh core.
type incrCheck struct {
	opts     snapshot.Options
	st       *snapshot.Store
	prev     *Snapshot
	base     uint64
	appended int
}

// writeIncremental logs the records not yet in the dir, writes a
// snapshot of the live core and requires a fresh core loaded from the
// dir to hold the same state: base and deltas equal the live state,
// through cancels, removals, retention and restarts.
func (p *prop) writeIncremental() {
	t := p.t
	ic := p.incr
	if ic == nil {
		ic = &incrCheck{opts: snapshot.Options{Dir: t.TempDir(), Fsync: snapshot.FsyncNever,
			Logger: slog.New(slog.DiscardHandler)}}
		st, err := snapshot.Open(ic.opts)
		require.NoError(t, err)
		_, err = st.Replay(nil, nil)
		require.NoError(t, err)
		st.Start(nil, nil)
		t.Cleanup(func() { _ = st.Close() })
		ic.st, p.incr = st, ic
	}
	recs := p.h.fx.records
	if len(recs) == ic.appended {
		return // a snapshot needs a record after the last one
	}
	for _, r := range recs[ic.appended:] {
		ic.st.Append(r)
	}
	ic.appended = len(recs)
	lsn := ic.st.LastLSN()
	require.NoError(t, ic.st.WaitDurable(context.Background(), lsn))
	snap := p.h.c.Freeze()
	ch := snap.Since(ic.prev, ic.base)
	ch.bits = 4 // 16 ids a range: the few hundred tasks span many ranges
	require.NoError(t, ic.st.WriteIncremental(lsn, ch), "step %d", p.step)
	ic.prev, ic.base = snap, lsn

	ro := ic.opts
	ro.ReadOnly = true
	st, err := snapshot.Open(ro)
	require.NoError(t, err)
	defer st.Close()
	c, err := New(p.h.cfg, newRecorder())
	require.NoError(t, err)
	got, err := st.ReplayWith(snapshot.Loader{Entry: c.LoadEntry, Put: c.LoadTask, Drop: c.DropTask}, nil)
	require.NoError(t, err)
	require.Equal(t, lsn, got)
	require.Equal(t, dump(p.h.c), dump(c), "step %d: incremental snapshot", p.step)

	// The same through LoadBatch, as a restart loads, in batches of 3.
	st2, err := snapshot.Open(ro)
	require.NoError(t, err)
	defer st2.Close()
	c2, err := New(p.h.cfg, newRecorder())
	require.NoError(t, err)
	l := newBatchLoader(t, c2, 3)
	_, err = st2.ReplayWith(l.loader(), nil)
	require.NoError(t, err)
	require.NoError(t, l.flush())
	require.Equal(t, dump(c), dump(c2), "step %d: incremental snapshot in batches", p.step)
	p.stats["incremental"]++
}

// TestSnapshot_ChangesFindWhatChanged: Changes reports a chunk changed
// exactly when a task in it changed, and writes only those tasks.
func TestSnapshot_ChangesFindWhatChanged(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	for range 3000 {
		h.submit(cl, "task_type", "a")
	}
	first := h.c.Freeze()
	h.send(cl, "cancel", "req", "c", "task_id", "2500")
	h.expect(cl, "cancelled")
	second := h.c.Freeze()
	ch := second.Since(first, 7)
	require.Equal(t, uint64(7), ch.BaseLSN())
	var changed []uint64
	ch.Ranges(func(r uint64, live int, c, settled bool) {
		if c {
			changed = append(changed, r)
		}
	})
	require.Equal(t, []uint64{2500 >> chunkBits}, changed)
	var put, dropped []uint64
	require.NoError(t, ch.WriteRange(2500>>chunkBits, false,
		func(k uint64, _ []byte) error { put = append(put, k); return nil },
		func(k uint64) error { dropped = append(dropped, k); return nil }))
	require.Equal(t, []uint64{2500}, put)
	require.Empty(t, dropped)
	require.Equal(t, uint64(1024), ch.Floor(1), "range 1 holds ids 1024 on")
	require.Equal(t, uint64(1), ch.Floor(0), "no task has id 0")
	require.Equal(t, uint64(4096), ch.Floor(3), "an empty range's floor is its end")
	require.False(t, ch.StateChanged())
	require.True(t, first.Since(nil, 7).StateChanged())
	require.Zero(t, first.Since(nil, 7).BaseLSN())
}
