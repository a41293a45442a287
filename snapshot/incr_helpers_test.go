package snapshot_test

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/snapshot"
)

// kvState is a keyed state as an incremental snapshot sees it: entries by
// key, an unkeyed state and a head, with the copy last written to compare
// against (a snapshot.Source, as the main control's core is).
type kvState struct {
	bits    uint
	entries map[uint64]string
	state   map[string]string
	head    string
	nextKey uint64
	// nextRun is the next run key's offset from snapshot.RunKeys
	// (mutateRuns), 0 while the state holds no runs.
	nextRun uint64
}

func newKV(bits uint) *kvState {
	return &kvState{bits: bits, entries: map[uint64]string{}, state: map[string]string{}, nextKey: 1}
}

func (s *kvState) clone() *kvState {
	return &kvState{bits: s.bits, entries: maps.Clone(s.entries), state: maps.Clone(s.state), head: s.head, nextKey: s.nextKey,
		nextRun: s.nextRun}
}

// kvSource is the changes from prev (written at base) to cur.
type kvSource struct {
	cur, prev *kvState
	base      uint64
}

func (k *kvSource) BaseLSN() uint64 { return k.base }
func (k *kvSource) RangeBits() uint { return k.cur.bits }
func (k *kvSource) Head(add func(p []byte) error) error {
	return add([]byte("head " + k.cur.head))
}

func (k *kvSource) StateChanged() bool {
	return k.prev == nil || !maps.Equal(k.prev.state, k.cur.state)
}

func (k *kvSource) State(add func(p []byte) error) error {
	for _, key := range slices.Sorted(maps.Keys(k.cur.state)) {
		if err := add([]byte("state " + key + "=" + k.cur.state[key])); err != nil {
			return err
		}
	}
	return nil
}

func (k *kvSource) Floor(r uint64) uint64 {
	f := (r + 1) << k.cur.bits
	for key := range k.cur.entries {
		if key>>k.cur.bits == r {
			f = min(f, key)
		}
	}
	return f
}

func (k *kvSource) prevEntries() map[uint64]string {
	if k.prev == nil {
		return nil
	}
	return k.prev.entries
}

func (k *kvSource) Ranges(fn func(r uint64, live int, changed, settled bool)) {
	lives := map[uint64]int{}
	changed := map[uint64]bool{}
	for key, v := range k.cur.entries {
		r := key >> k.cur.bits
		lives[r]++
		if old, ok := k.prevEntries()[key]; !ok || old != v {
			changed[r] = true
		}
	}
	for key := range k.prevEntries() {
		r := key >> k.cur.bits
		if _, ok := k.cur.entries[key]; !ok {
			changed[r] = true
			lives[r] += 0
		}
	}
	for _, r := range slices.Sorted(maps.Keys(lives)) {
		// Settled, as the main control's tasks: no new key, and no change.
		fn(r, lives[r], changed[r], !changed[r] && (r+1)<<k.cur.bits <= k.cur.nextKey)
	}
}

func (k *kvSource) WriteRange(r uint64, full bool, put func(uint64, []byte) error, drop func(uint64) error) error {
	lo, hi := r<<k.cur.bits, (r+1)<<k.cur.bits
	var keys []uint64
	for key := range k.cur.entries {
		if key >= lo && key < hi {
			keys = append(keys, key)
		}
	}
	for key := range k.prevEntries() {
		if _, ok := k.cur.entries[key]; !ok && key >= lo && key < hi && !full {
			keys = append(keys, key)
		}
	}
	slices.Sort(keys)
	for _, key := range keys {
		v, ok := k.cur.entries[key]
		switch {
		case !ok:
			if err := drop(key); err != nil {
				return err
			}
		case full || k.prevEntries()[key] != v || !hasKey(k.prevEntries(), key):
			if err := put(key, []byte(v)); err != nil {
				return err
			}
		}
	}
	return nil
}

func hasKey(m map[uint64]string, k uint64) bool {
	_, ok := m[k]
	return ok
}

// loadKV replays a data dir into a kvState-like rendering: head, state
// lines and entries.
func loadKV(tb testing.TB, opts snapshot.Options) (string, uint64) {
	tb.Helper()
	opts.ReadOnly = true
	s, err := snapshot.Open(opts)
	require.NoError(tb, err)
	defer s.Close()
	got := &kvState{entries: map[uint64]string{}, state: map[string]string{}}
	var heads []string
	lsn, err := s.ReplayWith(snapshot.Loader{
		Entry: func(p []byte) error { heads = append(heads, string(p)); return nil },
		Put:   func(k uint64, p []byte) error { got.entries[k] = string(p); return nil },
		Drop: func(k uint64) error {
			delete(got.entries, k)
			return nil
		},
	}, nil)
	require.NoError(tb, err)
	return fmt.Sprint(heads, render(got.entries)), lsn
}

func render(m map[uint64]string) string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, fmt.Sprintf("%d=%s", k, m[k]))
	}
	return fmt.Sprint(out)
}

// want is what loadKV should return for s.
func (s *kvState) want() string {
	heads := []string{"head " + s.head}
	for _, key := range slices.Sorted(maps.Keys(s.state)) {
		heads = append(heads, "state "+key+"="+s.state[key])
	}
	return fmt.Sprint(heads, render(s.entries))
}

// mutate applies a random step of a FIFO workload with random changes:
// new keys, changes near the head, removals of the oldest (retention),
// and scattered changes and removals.
func (s *kvState) mutate(rnd *rand.Rand, n int) {
	for range n {
		switch r := rnd.IntN(100); {
		case r < 40:
			s.entries[s.nextKey] = fmt.Sprintf("v%d-%d", s.nextKey, rnd.IntN(1000))
			s.nextKey++
		case r < 70 && len(s.entries) > 0: // change a recent one
			k := s.nextKey - 1 - uint64(rnd.IntN(min(int(s.nextKey-1), 50)))
			if _, ok := s.entries[k]; ok {
				s.entries[k] = fmt.Sprintf("v%d-%d", k, rnd.IntN(1000))
			}
		case r < 85 && len(s.entries) > 0: // retention drops the oldest
			k := slices.Min(slices.Collect(maps.Keys(s.entries)))
			delete(s.entries, k)
		case r < 92 && s.nextKey > 1: // scattered change or removal
			k := 1 + rnd.Uint64N(s.nextKey-1)
			if _, ok := s.entries[k]; ok {
				if rnd.IntN(2) == 0 {
					delete(s.entries, k)
				} else {
					s.entries[k] += "+"
				}
			}
		case r < 96:
			s.state[fmt.Sprint("k", rnd.IntN(5))] = fmt.Sprint(rnd.IntN(100))
		default:
			s.head = fmt.Sprint("h", rnd.IntN(1000))
		}
	}
}

// mutateRuns applies n random changes to keys from snapshot.RunKeys up,
// as the main control's runs: new ones, changes of recent ones, and
// removals of the oldest.
func (s *kvState) mutateRuns(rnd *rand.Rand, n int) {
	s.nextRun = max(s.nextRun, 1)
	for range n {
		switch r := rnd.IntN(100); {
		case r < 50:
			s.entries[snapshot.RunKeys|s.nextRun] = fmt.Sprintf("run%d-%d", s.nextRun, rnd.IntN(1000))
			s.nextRun++
		case r < 80: // a recent run changes
			k := snapshot.RunKeys | (s.nextRun - 1 - uint64(rnd.IntN(int(min(s.nextRun-1, 30))+1)))
			if _, ok := s.entries[k]; ok {
				s.entries[k] += "+"
			}
		default: // retention forgets the oldest
			for k := snapshot.RunKeys; k < snapshot.RunKeys|s.nextRun; k++ {
				if _, ok := s.entries[k]; ok {
					delete(s.entries, k)
					break
				}
			}
		}
	}
}
