package snapshot_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/snapshot"
	"github.com/apollo11/apollo11/snapshot/snapshottest"
)

// incrWriter writes incremental snapshots of a kvState into a Store, as the main control does.
// Each is written against the state last written.
type incrWriter struct {
	tb   testing.TB
	opts snapshot.Options
	s    *snapshot.Store
	prev *kvState
	base uint64
}

func startIncr(tb testing.TB, opts snapshot.Options) *incrWriter {
	tb.Helper()
	w := &incrWriter{tb: tb, opts: opts}
	w.open()
	return w
}

// open opens the store and takes what it loads as the state written.
func (w *incrWriter) open() {
	w.tb.Helper()
	s, err := snapshot.Open(w.opts)
	require.NoError(w.tb, err)
	got := newKV(0)
	lsn, err := s.ReplayWith(snapshot.Loader{
		Put:  func(k uint64, p []byte) error { got.entries[k] = string(p); return nil },
		Drop: func(k uint64) error { delete(got.entries, k); return nil },
		Entry: func(p []byte) error {
			if v, ok := strings.CutPrefix(string(p), "state "); ok {
				k, val, _ := strings.Cut(v, "=")
				got.state[k] = val
			} else if h, ok := strings.CutPrefix(string(p), "head "); ok {
				got.head = h
			}
			return nil
		},
	}, nil)
	require.NoError(w.tb, err)
	s.Start(nil, nil)
	w.s, w.prev, w.base = s, got, lsn
}

func (w *incrWriter) close() { _ = w.s.Close() }

// write appends a record, since a snapshot needs one after the last.
// Then it writes the snapshot of cur.
func (w *incrWriter) write(cur *kvState) error {
	w.tb.Helper()
	lsn := appendN(w.tb, w.s, 1)
	waitDurable(w.tb, w.s, lsn)
	prev := w.prev
	if prev != nil {
		prev.bits = cur.bits
	}
	err := w.s.WriteIncremental(lsn, &kvSource{cur: cur, prev: prev, base: w.base})
	if err == nil {
		w.prev, w.base = cur.clone(), lsn
	}
	return err
}

func writtenBytes(s *snapshot.Store) uint64 { return s.Stats().SnapshotWritten }

// TestIncremental_Equivalence checks that a data dir loads the state written
// from its manifest and parts. It checks after every snapshot of a random workload.
// The workload has new keys, changes, retention, scattered changes and removals, and state changes.
// It holds across reopens, and the parts kept stay bounded.
func TestIncremental_Equivalence(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		dir := t.TempDir()
		opts, _ := testOptions(dir)
		opts.FS, opts.Fsync = noSyncFS{snapshot.OS}, snapshot.FsyncNever
		rnd := rand.New(rand.NewPCG(seed, 9))
		cur := newKV(3) // 8 keys a range: many ranges, many rewrites
		w := startIncr(t, opts)
		for round := range 200 {
			cur.mutate(rnd, 1+rnd.IntN(30))
			require.NoError(t, w.write(cur), "round %d", round)
			got, _ := loadKV(t, opts)
			require.Equal(t, cur.want(), got, "seed %d round %d", seed, round)
			if rnd.IntN(20) == 0 {
				w.close()
				w.open()
			}
		}
		w.close()
		parts, _ := filepath.Glob(filepath.Join(dir, "snapshot-*-*"))
		assert.Less(t, len(parts), 2*130+len(cur.entries)/8+4, "parts kept")
	}
}

// TestIncremental_CostFollowsChange checks that a snapshot after a few changes
// to a large state writes a few entries, not the state.
func TestIncremental_CostFollowsChange(t *testing.T) {
	opts, _ := testOptions(t.TempDir())
	cur := newKV(10)
	for range 100_000 {
		cur.entries[cur.nextKey] = strings.Repeat("x", 100)
		cur.nextKey++
	}
	w := startIncr(t, opts)
	defer w.close()
	require.NoError(t, w.write(cur))
	full := writtenBytes(w.s)
	require.Greater(t, full, uint64(100_000*100))
	for round := range 20 {
		before := writtenBytes(w.s)
		for range 10 { // FIFO: the oldest goes, a new one comes, one changes
			delete(cur.entries, cur.nextKey-100_000)
			cur.entries[cur.nextKey] = strings.Repeat("y", 100)
			cur.entries[cur.nextKey-50] = strings.Repeat("z", 100)
			cur.nextKey++
		}
		require.NoError(t, w.write(cur))
		assert.Less(t, writtenBytes(w.s)-before, uint64(64<<10), "round %d", round)
		if round%5 == 4 { // a restart rebuilds the structure, bases included
			w.close()
			w.open()
		}
	}
	got, _ := loadKV(t, opts)
	require.Equal(t, cur.want(), got)
}

// TestIncremental_KillAtEveryStep kills at every step of writing a snapshot.
// The steps are every create, write, fsync, rename and removal.
// The dir left loads the snapshot before it or the new one, never anything else.
// The next start removes what the kill left, and snapshots go on.
func TestIncremental_KillAtEveryStep(t *testing.T) { killAtEveryStep(t, false) }

// killAtEveryStep is TestIncremental_KillAtEveryStep, with runs keys
// changing too when runs is set.
func killAtEveryStep(t *testing.T, runs bool) {
	rnd := rand.New(rand.NewPCG(3, 3))
	mutate := func(s *kvState, n int) {
		s.mutate(rnd, n)
		if runs {
			s.mutateRuns(rnd, n/2)
		}
	}
	for step := 0; ; step++ {
		dir := t.TempDir()
		opts, _ := testOptions(dir)
		cfs := snapshottest.NewCrashFS(-1)
		opts.FS = cfs
		cur := newKV(3)
		w := startIncr(t, opts)
		var states []string
		for range 3 { // a previous snapshot and one before it, sharing parts
			mutate(cur, 40)
			require.NoError(t, w.write(cur))
			states = append(states, cur.want())
		}
		old := states[len(states)-1]
		mutate(cur, 40)
		cur.state["new"] = "1"
		lsn := appendN(t, w.s, 1)
		waitDurable(t, w.s, lsn)
		before := cfs.Steps()
		cfs.CrashAfter(step)
		err := w.s.WriteIncremental(lsn, &kvSource{cur: cur, prev: w.prev, base: w.base})
		taken := cfs.Steps() - before
		w.close()
		cfs.CrashAfter(-1)
		opts.FS = snapshot.OS
		got, _ := loadKV(t, opts) // read-only: as the kill left it
		if err != nil {
			require.ErrorIs(t, err, snapshottest.ErrCrashed)
			require.Contains(t, []string{old, cur.want()}, got, "kill after %d steps: %v", step, cfs.Ops()[before:])
		} else {
			require.Equal(t, cur.want(), got)
		}
		// A start cleans up. The next snapshot builds on what it loads.
		w2 := startIncr(t, opts)
		require.Equal(t, got, w2.prev.want())
		assertNoUnusedParts(t, dir)
		cur2 := w2.prev.clone()
		cur2.bits, cur2.nextKey, cur2.nextRun = 3, cur.nextKey, cur.nextRun
		mutate(cur2, 20)
		require.NoError(t, w2.write(cur2))
		w2.close()
		got2, _ := loadKV(t, opts)
		require.Equal(t, cur2.want(), got2)
		if err == nil {
			t.Logf("a snapshot takes %d steps; killed after each of them", taken)
			return
		}
	}
}

// assertNoUnusedParts checks that every part in dir is used by a manifest.
func assertNoUnusedParts(t *testing.T, dir string) {
	t.Helper()
	info, err := snapshot.Inspect(snapshot.Options{Dir: dir})
	require.NoError(t, err)
	assert.Empty(t, info.UnusedParts)
	for _, e := range mustReadDir(t, dir) {
		assert.False(t, strings.HasSuffix(e, ".tmp"), e)
	}
}

func mustReadDir(t *testing.T, dir string) []string {
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

// twoSnapshots writes three incremental snapshots, so that the newest two
// are kept, and returns the states of the newest two.
func twoSnapshots(t *testing.T, opts snapshot.Options) (prev, newest *kvState, w *incrWriter) {
	t.Helper()
	rnd := rand.New(rand.NewPCG(5, 5))
	cur := newKV(3)
	w = startIncr(t, opts)
	for i := range 3 {
		cur.mutate(rnd, 60)
		cur.state["n"] = fmt.Sprint(i)
		require.NoError(t, w.write(cur))
		if i == 1 {
			prev = cur.clone()
		}
	}
	return prev, cur, w
}

func manifests(t *testing.T, dir string) []snapshot.SnapshotInfo {
	t.Helper()
	info, err := snapshot.Inspect(snapshot.Options{Dir: dir})
	require.NoError(t, err)
	return info.Snapshots
}

// partsOnlyIn returns the parts the newer manifest uses and the older not.
func partsOnlyIn(newer, older snapshot.SnapshotInfo) (only, shared []string) {
	in := map[string]bool{}
	for _, p := range older.Parts {
		in[p.Name] = true
	}
	for _, p := range newer.Parts {
		if in[p.Name] {
			shared = append(shared, p.Name)
		} else {
			only = append(only, p.Name)
		}
	}
	return only, shared
}

func flipByte(t *testing.T, path string) {
	t.Helper()
	modifyFile(t, path, func(b []byte) []byte {
		b[len(b)/2] ^= 0x40
		return b
	})
}

// TestIncremental_CorruptPartFallsBack checks a corrupt part that only the newest snapshot uses.
// Startup loads the previous snapshot and replays the log from it.
func TestIncremental_CorruptPartFallsBack(t *testing.T) {
	dir := t.TempDir()
	opts, logs := testOptions(dir)
	prev, _, w := twoSnapshots(t, opts)
	w.close()
	ms := manifests(t, dir)
	require.Len(t, ms, 2)
	only, _ := partsOnlyIn(ms[1], ms[0])
	require.NotEmpty(t, only)
	flipByte(t, filepath.Join(dir, only[0]))
	got, lsn := loadKV(t, opts)
	require.Equal(t, prev.want(), got)
	require.Equal(t, ms[0].LSN, lsn)
	require.Contains(t, logs.String(), "snapshot uses an invalid part")
	s, r := MustStart(t, opts)
	require.Equal(t, ms[0].LSN, r.SnapLSN)
	require.NotEmpty(t, r.Records, "the log after the previous snapshot is replayed")
	require.NoError(t, s.Close())
}

// TestIncremental_CorruptSharedPartStops checks a corrupt part that every loadable snapshot uses.
// It stops startup with an error naming it.
func TestIncremental_CorruptSharedPartStops(t *testing.T) {
	dir := t.TempDir()
	opts, _ := testOptions(dir)
	_, _, w := twoSnapshots(t, opts)
	w.close()
	ms := manifests(t, dir)
	_, shared := partsOnlyIn(ms[1], ms[0])
	require.NotEmpty(t, shared)
	flipByte(t, filepath.Join(dir, shared[0]))
	before := mustReadDir(t, dir)
	_, err := snapshot.Open(opts)
	require.ErrorIs(t, err, snapshot.ErrBadSnapshot)
	require.ErrorContains(t, err, shared[0])
	require.Equal(t, before, mustReadDir(t, dir), "a refused start removes nothing")
	info, err := snapshot.Inspect(opts)
	require.NoError(t, err)
	require.Contains(t, info.OpenError, shared[0])
}

// TestIncremental_CorruptManifestFallsBack checks that a corrupt manifest
// makes startup load the previous snapshot.
func TestIncremental_CorruptManifestFallsBack(t *testing.T) {
	dir := t.TempDir()
	opts, _ := testOptions(dir)
	prev, _, w := twoSnapshots(t, opts)
	w.close()
	ms := manifests(t, dir)
	flipByte(t, filepath.Join(dir, ms[1].Name))
	got, lsn := loadKV(t, opts)
	require.Equal(t, prev.want(), got)
	require.Equal(t, ms[0].LSN, lsn)
	// The next snapshot builds on the one loaded.
	w2 := startIncr(t, opts)
	defer w2.close()
	cur := w2.prev.clone()
	cur.bits, cur.nextKey = 3, 1000
	cur.entries[999] = "new"
	require.NoError(t, w2.write(cur))
	got, _ = loadKV(t, opts)
	require.Equal(t, cur.want(), got)
	assertNoUnusedParts(t, dir)
}

// TestIncremental_AfterWholeSnapshot checks a data dir whose newest snapshot is whole.
// That is format 1, as older releases wrote. The dir loads.
// The first incremental snapshot after it writes every range.
// The whole one is kept as the fallback until the next.
func TestIncremental_AfterWholeSnapshot(t *testing.T) {
	dir := t.TempDir()
	opts, _ := testOptions(dir)
	s, _ := MustStart(t, opts)
	lsn := appendN(t, s, 3)
	waitDurable(t, s, lsn)
	require.NoError(t, s.WriteSnapshot(lsn, fill("head h0")))
	require.NoError(t, s.Close())
	w := startIncr(t, opts)
	defer w.close()
	require.Equal(t, "h0", w.prev.head)
	cur := newKV(3)
	cur.head = "h1"
	for k := uint64(1); k < 40; k++ {
		cur.entries[k] = fmt.Sprint("v", k)
	}
	cur.nextKey = 40
	require.NoError(t, w.write(cur))
	got, _ := loadKV(t, opts)
	require.Equal(t, cur.want(), got)
	ms := manifests(t, dir)
	require.Len(t, ms, 2)
	require.Equal(t, uint32(1), ms[0].Format)
	require.Equal(t, uint32(3), ms[1].Format)
}

// TestIncremental_NewerPartRefused checks that a part of a newer format stops startup.
// The error names it and both versions.
// A fallback instead might miss records.
func TestIncremental_NewerPartRefused(t *testing.T) {
	dir := t.TempDir()
	opts, _ := testOptions(dir)
	_, _, w := twoSnapshots(t, opts)
	w.close()
	ms := manifests(t, dir)
	only, _ := partsOnlyIn(ms[1], ms[0])
	require.NotEmpty(t, only)
	modifyFile(t, filepath.Join(dir, only[0]), func(b []byte) []byte {
		b[11] = 9 // the version's low byte
		return resealTrailer(b)
	})
	_, err := snapshot.Open(opts)
	require.ErrorIs(t, err, snapshot.ErrNewerFormat)
	require.ErrorContains(t, err, only[0]+" has format version 9, and this binary reads up to version 1")
}

// TestIncremental_FlippedVersionFallsBack flips a version byte in the newest manifest
// or in a part only it uses. That fails the checksum.
// It is damage, so startup loads the previous snapshot.
func TestIncremental_FlippedVersionFallsBack(t *testing.T) {
	for _, which := range []string{"manifest", "part"} {
		dir := t.TempDir()
		opts, _ := testOptions(dir)
		prev, _, w := twoSnapshots(t, opts)
		w.close()
		ms := manifests(t, dir)
		require.Len(t, ms, 2)
		name := ms[1].Name
		if which == "part" {
			only, _ := partsOnlyIn(ms[1], ms[0])
			require.NotEmpty(t, only)
			name = only[0]
		}
		modifyFile(t, filepath.Join(dir, name), func(b []byte) []byte { b[11] = 9; return b })
		got, lsn := loadKV(t, opts)
		require.Equal(t, prev.want(), got, which)
		require.Equal(t, ms[0].LSN, lsn, which)
	}
}

// TestStore_ReplaySize checks that ReplaySize counts the snapshot's
// manifest and parts and the log after them, and no older log.
func TestStore_ReplaySize(t *testing.T) {
	dir := t.TempDir()
	opts, _ := testOptions(dir)
	opts.SegmentBytes = 4096 // the log before the snapshot is in segments of its own
	sum := func(files []string) (n int64) {
		for _, f := range files {
			n += fileSize(t, filepath.Join(dir, f))
		}
		return n
	}
	w := startIncr(t, opts)
	appendN(t, w.s, 2000)
	cur := newKV(6)
	for range 1000 {
		cur.entries[cur.nextKey] = strings.Repeat("x", 100)
		cur.nextKey++
	}
	require.NoError(t, w.write(cur))
	old := sum(segments(t, dir))
	lsn := appendN(t, w.s, 5)
	waitDurable(t, w.s, lsn)
	w.close()
	snaps, logs := sum(snapshots(t, dir)), sum(segments(t, dir))
	require.Greater(t, snaps, int64(100_000))
	s := MustOpen(t, opts)
	defer s.Close()
	got := s.ReplaySize()
	assert.Greater(t, got, snaps, "the records after the snapshot count")
	assert.LessOrEqual(t, got, snaps+logs-old+4096, "the segments before the snapshot do not count")
}
