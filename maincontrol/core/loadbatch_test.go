package core

import (
	"strconv"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/snapshot"
)

// batchLoader loads a core through LoadBatch in batches of n, decoded in
// turn by two decoders, as a restart's reader, decoders and core do.
type batchLoader struct {
	t     testing.TB
	c     *Core
	n     int
	cur   *LoadBatch
	decs  [2]LoadDecoder
	sent  int
	first bool // no batch sent yet
}

func newBatchLoader(t testing.TB, c *Core, n int) *batchLoader {
	return &batchLoader{t: t, c: c, n: n, cur: &LoadBatch{}, first: true}
}

func (l *batchLoader) added() error {
	if l.cur.Len() >= l.n {
		return l.flush()
	}
	return nil
}

func (l *batchLoader) flush() error {
	if l.cur.Len() == 0 {
		return nil
	}
	b := l.cur
	l.cur = &LoadBatch{}
	l.cur.Follow(b)
	b.Decode(&l.decs[l.sent%2])
	l.sent++
	return l.c.LoadBatch(b)
}

func (l *batchLoader) loader() snapshot.Loader {
	return snapshot.Loader{
		Entry: func(p []byte) error { l.cur.Entry(p); return l.added() },
		Put:   func(id uint64, p []byte) error { l.cur.Put(id, p); return l.added() },
		Drop:  func(id uint64) error { l.cur.Drop(id); return l.added() },
	}
}

// loadedBatched is harness.loaded through LoadBatch, in batches of n.
func (h *harness) loadedBatched(entries, records [][]byte, n int) *Core {
	h.t.Helper()
	c, err := New(h.cfg, newRecorder())
	require.NoError(h.t, err)
	l := newBatchLoader(h.t, c, n)
	for _, e := range entries {
		l.cur.Entry(e)
		require.NoError(h.t, l.added())
	}
	require.NoError(h.t, l.flush()) // records come in batches of their own
	for i, r := range records {
		l.cur.Record(uint64(i+1), r)
		require.NoError(h.t, l.added())
	}
	require.NoError(h.t, l.flush())
	return c
}

// Loading in batches, whatever their size, gives the state one entry and
// one record at a time gives.
func TestLoadBatch_SameStateAsOneByOne(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxRetrying = 1 })
	cl, e1, _ := richState(t, h)
	entries := snapshotEntries(t, h.c)
	n := len(h.fx.records)
	h.advance(DefaultStartTimeout) // 6 and 12 taken back
	h.drain(e1)
	h.submit(cl, "task_type", "x", "key", "k13")
	h.drain(e1)
	h.start(e1, 5, 1)
	h.accepted(e1, 5, 1, "succeeded", "state.add.n", "1")
	h.advance(time.Minute) // the delay of 3 ends, 9's backoff ends, 11 is armed, e2 lost
	h.send(cl, "cancel", "req", "c", "task_id", "1")
	h.expect(cl, "cancelled")
	want := dump(h.loaded(entries, h.fx.records[n:]))
	require.Equal(t, dump(h.c), want)
	for _, size := range []int{1, 2, 3, 512} {
		assert.Equal(t, want, dump(h.loadedBatched(entries, h.fx.records[n:], size)), "batches of %d", size)
		assert.Equal(t, dump(h.loaded(nil, h.fx.records)), dump(h.loadedBatched(nil, h.fx.records, size)),
			"the log alone, batches of %d", size)
	}
}

// A bad entry is refused when the core reaches its batch, naming the
// task, and a batch not decoded is refused, never loaded half-read.
func TestLoadBatch_Errors(t *testing.T) {
	h := newHarness(t)
	c, err := New(h.cfg, newRecorder())
	require.NoError(t, err)
	var b LoadBatch
	b.Put(7, []byte{byte(snapTask), 7}) // cut short
	require.ErrorContains(t, c.LoadBatch(&b), "not decoded")
	b.Decode(&LoadDecoder{})
	err = c.LoadBatch(&b)
	require.ErrorIs(t, err, ErrCorrupt)
	require.ErrorContains(t, err, "snapshot task 7")

	// An entry keyed by another task's id.
	r := record{kind: snapTask, id: 8, typ: "x", state: Pending}
	b.Reset()
	b.Put(9, appendRecord(nil, &r))
	b.Decode(&LoadDecoder{})
	require.ErrorContains(t, c.LoadBatch(&b), "keyed 9")

	// A snapshot entry in the log.
	b.Reset()
	b.Record(3, appendRecord(nil, &r))
	b.Decode(&LoadDecoder{})
	err = c.LoadBatch(&b)
	require.ErrorIs(t, err, ErrCorrupt)
	require.ErrorContains(t, err, "replay of record 3")
}

// Chunks are made ready once each, only past every put of the batches
// before, and the core keeps no more spare chunks than it would.
func TestLoadBatch_ChunksReadyOnce(t *testing.T) {
	h := newHarness(t)
	c, err := New(h.cfg, newRecorder())
	require.NoError(t, err)
	put := func(b *LoadBatch, id uint64) {
		r := record{kind: snapTask, id: id, typ: "t" + strconv.Itoa(int(id%2)), state: Pending, seq: id}
		b.Put(id, appendRecord(nil, &r))
	}
	var d LoadDecoder
	var b1, b2, b3 LoadBatch
	for id := uint64(1); id <= 3*chunkSize; id += 100 {
		put(&b1, id) // chunks 0 to 2
	}
	b2.Follow(&b1)
	put(&b2, 3*chunkSize-1)   // chunk 2 again: ready already
	put(&b2, 5*chunkSize+1)   // chunk 5
	put(&b2, 5*chunkSize+100) // and again
	b3.Follow(&b2)
	put(&b3, 7) // a newer part's entry for a chunk loaded before
	for _, b := range []*LoadBatch{&b1, &b2, &b3} {
		b.Decode(&d)
	}
	assert.Len(t, b1.chunks, 3)
	assert.Len(t, b2.chunks, 1)
	assert.Empty(t, b3.chunks)
	for _, b := range []*LoadBatch{&b1, &b2, &b3} {
		require.NoError(t, c.LoadBatch(b))
	}
	c.Recovered()
	assert.LessOrEqual(t, len(c.tasks.spare), maxSpareChunks)
	assert.Equal(t, 35, c.counts[Pending])

	// The decoder interns task types: the tasks share one string each.
	a, b := b1.recs[0].typ, b1.recs[2].typ
	require.Equal(t, "t1", a)
	require.Equal(t, a, b)
	assert.Equal(t, unsafe.StringData(a), unsafe.StringData(b))
}

// TestInterner_CopySharesBlocks checks that a restart's decoder copies
// short strings into shared blocks, one allocation for many, and that a
// string keeps its bytes as later ones fill its block.
func TestInterner_CopySharesBlocks(t *testing.T) {
	var in interner
	arg := []byte("arg.p=" + string(make([]byte, 100)))
	allocs := testing.AllocsPerRun(1000, func() { _ = in.copy(arg) })
	assert.Less(t, allocs, 0.05, "allocations per 106-byte string")

	in = interner{}
	buf := []byte("first")
	first := in.copy(buf)
	buf[0] = 'X' // the decoder's buffer is reused
	for i := range 1000 {
		require.Equal(t, strconv.Itoa(i), in.copy([]byte(strconv.Itoa(i))))
	}
	assert.Equal(t, "first", first)
	long := make([]byte, strBlock)
	assert.Len(t, in.copy(long), strBlock, "a long string is copied whole")
	assert.Empty(t, in.copy(nil))
}
