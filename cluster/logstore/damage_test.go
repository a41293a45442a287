package logstore

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/raft"
)

// TestStore_RandomDamageNeverServesWrongEntries flips random bytes in the
// store's files, or cuts them short. Open must fail with an error, or
// serve only the entries that were stored, consecutive and unchanged.
// It must never panic.
func TestStore_RandomDamageNeverServesWrongEntries(t *testing.T) {
	src := t.TempDir()
	s := openTest(t, src)
	want := entries(1, 60, 1)
	for i := 0; i < 60; i += 12 {
		if err := s.StoreLogs(want[i : i+12]); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.DeleteRange(1, 4); err != nil { // writes the first file
		t.Fatal(err)
	}
	if err := s.SetUint64([]byte("CurrentTerm"), 1); err != nil {
		t.Fatal(err)
	}
	s.Close()
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	var names []string
	for _, e := range ents {
		if b, err := os.ReadFile(filepath.Join(src, e.Name())); err == nil && e.Name() != "lock" {
			files[e.Name()] = b
			names = append(names, e.Name())
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	opened := 0
	for round := range 300 {
		dir := t.TempDir()
		for name, b := range files {
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		victim := names[rng.IntN(len(names))]
		b := append([]byte(nil), files[victim]...)
		if rng.IntN(4) == 0 {
			b = b[:rng.IntN(len(b))]
		} else {
			for range 1 + rng.IntN(3) {
				b[rng.IntN(len(b))] ^= byte(1 + rng.IntN(255))
			}
		}
		if err := os.WriteFile(filepath.Join(dir, victim), b, 0o600); err != nil {
			t.Fatal(err)
		}
		s, err := Open(dir, Options{SegmentBytes: testSegBytes})
		if err != nil {
			continue
		}
		opened++
		first, _ := s.FirstIndex()
		last, _ := s.LastIndex()
		for i := first; i <= last && last > 0; i++ {
			var l raft.Log
			if err := s.GetLog(i, &l); err != nil || !sameLog(&l, want[i-1]) {
				t.Fatalf("round %d, %s damaged: entry %d = %+v, %v", round, victim, i, l, err)
			}
		}
		s.Close()
	}
	t.Logf("%d of 300 damaged copies opened, every one serving stored entries only", opened)
}
