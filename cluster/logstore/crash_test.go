package logstore

import (
	"errors"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/apollo11/apollo11/snapshot/snapshottest"
)

// crashOp is one step of raft's use of the store, applied to the store
// and to the reference.
type crashOp struct {
	name string
	do   func(s raft.LogStore) error
}

var crashOps = []crashOp{
	{"store 1..30", func(s raft.LogStore) error { return s.StoreLogs(entries(1, 30, 1)) }},
	{"store 31", func(s raft.LogStore) error { return s.StoreLog(entries(31, 31, 1)[0]) }},
	{"suffix delete 12..31", func(s raft.LogStore) error { return s.DeleteRange(12, 31) }},
	{"store 12..45 of term 2", func(s raft.LogStore) error { return s.StoreLogs(entries(12, 45, 2)) }},
	{"prefix delete 1..5", func(s raft.LogStore) error { return s.DeleteRange(1, 5) }},
	{"prefix delete 6..30", func(s raft.LogStore) error { return s.DeleteRange(6, 30) }},
	{"delete all", func(s raft.LogStore) error { return s.DeleteRange(31, 45) }},
	{"store 60..70 of term 3", func(s raft.LogStore) error { return s.StoreLogs(entries(60, 70, 3)) }},
}

// crashRef is the reference after the first k operations.
func crashRef(k int) *raft.InmemStore {
	ref := raft.NewInmemStore()
	for _, o := range crashOps[:k] {
		o.do(ref)
	}
	return ref
}

// TestStore_CrashAtEveryStep kills the store (snapshottest.CrashFS) after
// every file system change in turn, then reopens it. The log must open
// without error and lie between the states before and after the
// operation under way: consecutive indexes, each entry one of the two
// states'. A suffix delete cut short leaves a longer log, and a prefix
// delete a shorter prefix gone; raft redoes both.
func TestStore_CrashAtEveryStep(t *testing.T) {
	for n := 0; ; n++ {
		dir := t.TempDir()
		cfs := snapshottest.NewCrashFS(n)
		s, err := Open(dir, Options{SegmentBytes: testSegBytes, FS: cfs})
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		crashed := -1
		for i, o := range crashOps {
			if err := o.do(s); err != nil {
				if !errors.Is(err, snapshottest.ErrCrashed) {
					t.Fatalf("step budget %d: %s: %v", n, o.name, err)
				}
				crashed = i
				break
			}
		}
		s.Close()
		s = openTest(t, dir)
		if crashed < 0 {
			compare(t, "no crash", s, crashRef(len(crashOps)))
			s.Close()
			t.Logf("crashed at each of %d steps", n)
			return
		}
		checkBetween(t, crashOps[crashed].name, s, crashRef(crashed), crashRef(crashed+1))
		s.Close()
	}
}

// checkBetween checks that s lies between the states before and after.
func checkBetween(t *testing.T, op string, s *Store, before, after *raft.InmemStore) {
	t.Helper()
	f, _ := s.FirstIndex()
	l, _ := s.LastIndex()
	fb, _ := before.FirstIndex()
	lb, _ := before.LastIndex()
	fa, _ := after.FirstIndex()
	la, _ := after.LastIndex()
	if l < min(lb, la) || l > max(lb, la) {
		t.Fatalf("crash in %s: last index %d, not between %d and %d", op, l, lb, la)
	}
	if l == 0 {
		return
	}
	lo, hi := min(fb, fa), max(fb, fa)
	if fb == 0 || fa == 0 {
		lo, hi = max(fb, fa), max(fb, fa)
	}
	if f < lo || f > hi {
		t.Fatalf("crash in %s: first index %d, not between %d and %d", op, f, lo, hi)
	}
	for i := f; i <= l; i++ {
		var got, b, a raft.Log
		if err := s.GetLog(i, &got); err != nil {
			t.Fatalf("crash in %s: GetLog(%d): %v", op, i, err)
		}
		okB := before.GetLog(i, &b) == nil && sameLog(&got, &b)
		okA := after.GetLog(i, &a) == nil && sameLog(&got, &a)
		if !okB && !okA {
			t.Fatalf("crash in %s: entry %d is neither the one before nor after", op, i)
		}
	}
}
