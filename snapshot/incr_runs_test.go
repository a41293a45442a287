package snapshot_test

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/snapshot"
)

// Keys from snapshot.RunKeys up (the main control's runs) go to runs
// parts of their own, written and kept as task parts are.

// TestIncremental_RunsKillAtEveryStep is TestIncremental_KillAtEveryStep
// with runs changing too, so that a snapshot writes a runs part after the
// task part: a kill between the two leaves the previous snapshot whole.
func TestIncremental_RunsKillAtEveryStep(t *testing.T) { killAtEveryStep(t, true) }

// twoRunSnapshots is twoSnapshots with runs.
func twoRunSnapshots(t *testing.T, opts snapshot.Options) (prev *kvState) {
	t.Helper()
	rnd := rand.New(rand.NewPCG(7, 7))
	cur := newKV(3)
	w := startIncr(t, opts)
	defer w.close()
	for i := range 3 {
		cur.mutate(rnd, 60)
		cur.mutateRuns(rnd, 40)
		cur.state["n"] = fmt.Sprint(i)
		require.NoError(t, w.write(cur))
		if i == 1 {
			prev = cur.clone()
		}
	}
	return prev
}

// runParts returns the runs parts of a manifest's part names.
func runParts(names []string) []string {
	var out []string
	for _, n := range names {
		if strings.HasSuffix(n, "-runs") {
			out = append(out, n)
		}
	}
	return out
}

// A snapshot after a few run changes writes only those runs, in a runs
// part that the inspector lists; the manifest is format 3.
func TestIncremental_RunsPartHoldsWhatChanged(t *testing.T) {
	dir := t.TempDir()
	opts, _ := testOptions(dir)
	cur := newKV(10)
	for range 5000 {
		cur.entries[snapshot.RunKeys|cur.nextRun+1] = strings.Repeat("r", 200)
		cur.nextRun++
	}
	cur.nextRun++
	w := startIncr(t, opts)
	defer w.close()
	require.NoError(t, w.write(cur))
	full := writtenBytes(w.s)
	for _, k := range []uint64{4990, 4995, 5000} {
		cur.entries[snapshot.RunKeys|k] += "+"
	}
	delete(cur.entries, snapshot.RunKeys|1)
	require.NoError(t, w.write(cur))
	delta := writtenBytes(w.s) - full
	require.Less(t, delta, uint64(2000), "a snapshot after 4 run changes of 5,000 runs (%d bytes whole)", full)
	got, _ := loadKV(t, opts)
	require.Equal(t, cur.want(), got)
	ms := manifests(t, dir)
	require.Len(t, ms, 2)
	newest := ms[1]
	require.Equal(t, uint32(3), newest.Format)
	var kinds []string
	for _, p := range newest.Parts {
		kinds = append(kinds, p.Kind)
		if p.Kind == "runs" && p.Name == fmt.Sprintf("snapshot-%020d-runs", newest.LSN) {
			require.Equal(t, uint64(3), p.Entries, "3 changed runs; the oldest, removed, is below the range's floor")
		}
	}
	require.Equal(t, []string{"runs", "runs"}, kinds, "the base and the delta")
}

// A corrupt runs part that only the newest snapshot uses makes startup
// load the previous snapshot; one that every loadable snapshot uses stops
// it, naming the part.
func TestIncremental_CorruptRunsPart(t *testing.T) {
	for _, shared := range []bool{false, true} {
		dir := t.TempDir()
		opts, logs := testOptions(dir)
		prev := twoRunSnapshots(t, opts)
		ms := manifests(t, dir)
		require.Len(t, ms, 2)
		only, both := partsOnlyIn(ms[1], ms[0])
		pick := runParts(only)
		if shared {
			pick = runParts(both)
		}
		require.NotEmpty(t, pick, "shared=%v: parts %v / %v", shared, only, both)
		flipByte(t, filepath.Join(dir, pick[0]))
		if !shared {
			got, lsn := loadKV(t, opts)
			require.Equal(t, prev.want(), got)
			require.Equal(t, ms[0].LSN, lsn)
			require.Contains(t, logs.String(), "snapshot uses an invalid part")
			continue
		}
		_, err := snapshot.Open(opts)
		require.ErrorIs(t, err, snapshot.ErrBadSnapshot)
		require.ErrorContains(t, err, pick[0])
	}
}

// A runs part of a newer format stops startup, naming it and both versions.
func TestIncremental_NewerRunsPartRefused(t *testing.T) {
	dir := t.TempDir()
	opts, _ := testOptions(dir)
	twoRunSnapshots(t, opts)
	ms := manifests(t, dir)
	only, _ := partsOnlyIn(ms[1], ms[0])
	pick := runParts(only)
	require.NotEmpty(t, pick)
	modifyFile(t, filepath.Join(dir, pick[0]), func(b []byte) []byte {
		b[11] = 9 // the version's low byte
		return resealTrailer(b)
	})
	_, err := snapshot.Open(opts)
	require.ErrorIs(t, err, snapshot.ErrNewerFormat)
	require.ErrorContains(t, err, pick[0]+" has format version 9, and this binary reads up to version 1")
}

// headRuns is a source that keeps its runs among its head entries, as
// manifests did before runs had parts.
type headRuns struct{ *kvSource }

func (h headRuns) Head(add func(p []byte) error) error {
	if err := h.kvSource.Head(add); err != nil {
		return err
	}
	for k, v := range h.cur.entries {
		if k >= snapshot.RunKeys {
			if err := add([]byte(fmt.Sprintf("run %d=%s", k, v))); err != nil {
				return err
			}
		}
	}
	return nil
}

func (h headRuns) Ranges(fn func(r uint64, live int, changed, settled bool)) {
	h.kvSource.Ranges(func(r uint64, live int, changed, settled bool) {
		if r<<h.cur.bits < snapshot.RunKeys {
			fn(r, live, changed, settled)
		}
	})
}

// After a manifest that kept the runs in its head, the next snapshot
// writes every range of runs whole, changed or not: no part held them.
func TestIncremental_RunsFromHeadGetParts(t *testing.T) {
	dir := t.TempDir()
	opts, _ := testOptions(dir)
	rnd := rand.New(rand.NewPCG(9, 9))
	cur := newKV(3)
	cur.mutate(rnd, 40)
	cur.mutateRuns(rnd, 40)
	w := startIncr(t, opts)
	lsn := appendN(t, w.s, 1)
	waitDurable(t, w.s, lsn)
	require.NoError(t, w.s.WriteIncremental(lsn, headRuns{&kvSource{cur: cur}}))
	w.prev, w.base = cur.clone(), lsn // the core loaded the runs from the head
	cur.mutate(rnd, 10)               // tasks change, runs do not
	require.NoError(t, w.write(cur))
	w.close()
	got, _ := loadKV(t, opts)
	require.Equal(t, cur.want(), got)
}
