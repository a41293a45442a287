package logstore

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/apollo11/apollo11/snapshot"
)

// testSegBytes makes segments of about eight entries, so that every
// table step crosses segment boundaries.
const testSegBytes = 1024

func openTest(t *testing.T, dir string) *Store {
	t.Helper()
	s, err := Open(dir, Options{SegmentBytes: testSegBytes})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return s
}

// entries makes entries from..to of term, with data and extensions of
// varied sizes, every third one with AppendedAt set.
func entries(from, to, term uint64) []*raft.Log {
	var logs []*raft.Log
	for i := from; i <= to; i++ {
		l := &raft.Log{Index: i, Term: term, Type: raft.LogType(i % 4),
			Data: bytes.Repeat([]byte{byte(i)}, int(i%7)*13)}
		if i%5 == 0 {
			l.Extensions = []byte(fmt.Sprintf("ext-%d", i))
		}
		if i%3 == 0 {
			l.AppendedAt = time.Unix(1700000000, int64(i)).UTC()
		}
		logs = append(logs, l)
	}
	return logs
}

// sameLog compares two entries as raft sees them.
func sameLog(a, b *raft.Log) bool {
	return a.Index == b.Index && a.Term == b.Term && a.Type == b.Type &&
		bytes.Equal(a.Data, b.Data) && bytes.Equal(a.Extensions, b.Extensions) &&
		a.AppendedAt.Equal(b.AppendedAt)
}

// compare checks that s holds what the reference holds.
func compare(t *testing.T, step string, s *Store, ref *raft.InmemStore) {
	t.Helper()
	f1, _ := ref.FirstIndex()
	l1, _ := ref.LastIndex()
	f2, err := s.FirstIndex()
	if err != nil {
		t.Fatalf("%s: FirstIndex: %v", step, err)
	}
	l2, err := s.LastIndex()
	if err != nil {
		t.Fatalf("%s: LastIndex: %v", step, err)
	}
	if f1 != f2 || l1 != l2 {
		t.Fatalf("%s: first/last %d/%d, reference %d/%d", step, f2, l2, f1, l1)
	}
	lo := uint64(1)
	if f1 > 3 {
		lo = f1 - 3
	}
	for i := lo; i <= l1+3; i++ {
		var want, got raft.Log
		werr := ref.GetLog(i, &want)
		gerr := s.GetLog(i, &got)
		if werr != nil {
			if !errors.Is(gerr, raft.ErrLogNotFound) {
				t.Fatalf("%s: GetLog(%d) = %v, reference has none", step, i, gerr)
			}
			continue
		}
		if gerr != nil || !sameLog(&want, &got) {
			t.Fatalf("%s: GetLog(%d) = %+v, %v; reference %+v", step, i, got, gerr, want)
		}
	}
}

// segFirsts lists the first index of each segment file in dir.
func segFirsts(t *testing.T, dir string) []uint64 {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var firsts []uint64
	for _, e := range ents {
		if n := parseSegName(e.Name()); n > 0 {
			firsts = append(firsts, n)
		}
	}
	slices.Sort(firsts)
	return firsts
}

// tearLast closes s and cuts its newest segment in the middle of its last
// record, as a crash during its write would. It returns s opened again.
func tearLast(t *testing.T, dir string, s *Store) *Store {
	t.Helper()
	g := s.segs[len(s.segs)-1]
	off, end := g.span(g.last())
	s.Close()
	if err := os.Truncate(filepath.Join(dir, g.name), off+(end-off)/2); err != nil {
		t.Fatal(err)
	}
	return openTest(t, dir)
}

func TestStore_MatchesInmemAcrossReopens(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, dir)
	defer func() { s.Close() }()
	ref := raft.NewInmemStore()
	type step struct {
		name string
		do   func(t *testing.T) // applies the step to s and ref
	}
	store := func(from, to, term uint64) func(t *testing.T) {
		return func(t *testing.T) {
			logs := entries(from, to, term)
			if err := s.StoreLogs(logs); err != nil {
				t.Fatalf("StoreLogs(%d..%d): %v", from, to, err)
			}
			ref.StoreLogs(logs)
		}
	}
	del := func(min, max uint64) func(t *testing.T) {
		return func(t *testing.T) {
			if err := s.DeleteRange(min, max); err != nil {
				t.Fatalf("DeleteRange(%d, %d): %v", min, max, err)
			}
			ref.DeleteRange(min, max)
		}
	}
	// boundary is the first index of the k-th segment on disk.
	boundary := func(t *testing.T, k int) uint64 {
		f := segFirsts(t, dir)
		if len(f) <= k {
			t.Fatalf("want %d segments, have %v", k+1, f)
		}
		return f[k]
	}
	steps := []step{
		{"store one", store(1, 1, 1)},
		{"store a batch across segments", store(2, 40, 1)},
		{"store one more", func(t *testing.T) { l := entries(41, 41, 2)[0]; s.StoreLog(l); ref.StoreLog(l) }},
		{"suffix delete inside a segment", func(t *testing.T) { del(boundary(t, 2)+2, 41)(t) }},
		{"overwrite the tail with a new term", func(t *testing.T) { l, _ := s.LastIndex(); store(l+1, 60, 3)(t) }},
		{"suffix delete across segment boundaries", func(t *testing.T) { del(boundary(t, 2)+1, 60)(t) }},
		{"suffix delete at a segment's first index", func(t *testing.T) { del(boundary(t, 2), 60)(t) }},
		{"store again", func(t *testing.T) { l, _ := s.LastIndex(); store(l+1, 80, 4)(t) }},
		{"prefix delete inside a segment", del(1, 3)},
		{"prefix delete across segments", func(t *testing.T) { del(4, boundary(t, 2)+1)(t) }},
		{"prefix delete up to a segment boundary", func(t *testing.T) { f, _ := s.FirstIndex(); del(f, boundary(t, 2)-1)(t) }},
		// InmemStore would move its first index back to 3 here; raft never asks this.
		{"delete what is gone already", func(t *testing.T) {
			if err := s.DeleteRange(1, 2); err != nil {
				t.Fatal(err)
			}
		}},
		{"torn last record", func(t *testing.T) { s = tearLast(t, dir, s); ref.DeleteRange(80, 80) }},
		{"store after the cut", store(80, 90, 4)},
		{"torn last record alone in its segment", func(t *testing.T) {
			l, _ := s.LastIndex()
			for len(segFirsts(t, dir)) == 0 || segFirsts(t, dir)[len(segFirsts(t, dir))-1] != l {
				l++
				store(l, l, 5)(t)
			}
			s = tearLast(t, dir, s)
			ref.DeleteRange(l, l)
		}},
		{"store after dropping the emptied segment", func(t *testing.T) { l, _ := s.LastIndex(); store(l+1, l+5, 5)(t) }},
		{"delete everything", func(t *testing.T) { f, _ := s.FirstIndex(); l, _ := s.LastIndex(); del(f, l)(t) }},
		{"store after a snapshot's index", store(500, 520, 6)},
		{"delete everything by its range", func(t *testing.T) { del(500, 520)(t) }},
		{"store from 1 again", store(1, 3, 7)},
	}
	for _, st := range steps {
		st.do(t)
		compare(t, st.name, s, ref)
		if err := s.Close(); err != nil {
			t.Fatalf("%s: Close: %v", st.name, err)
		}
		s = openTest(t, dir)
		compare(t, st.name+", reopened", s, ref)
	}
}

func TestStore_RefusesGapsAndInnerDeletes(t *testing.T) {
	s := openTest(t, t.TempDir())
	defer s.Close()
	if err := s.StoreLogs(entries(1, 20, 1)); err != nil {
		t.Fatal(err)
	}
	if err := s.StoreLogs(entries(22, 22, 1)); err == nil {
		t.Fatal("StoreLogs after a gap succeeded")
	}
	if err := s.StoreLogs([]*raft.Log{{Index: 21}, {Index: 23}}); err == nil {
		t.Fatal("StoreLogs of a batch with a gap succeeded")
	}
	if err := s.DeleteRange(5, 10); err == nil {
		t.Fatal("DeleteRange inside the log succeeded")
	}
	if l, _ := s.LastIndex(); l != 20 {
		t.Fatalf("LastIndex %d after refused calls, want 20", l)
	}
}

func TestStore_CorruptMiddleRecordNamesTheFile(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, dir)
	if err := s.StoreLogs(entries(1, 40, 1)); err != nil {
		t.Fatal(err)
	}
	g := s.segs[1]
	off, _ := g.span(g.first + 1)
	s.Close()
	path := filepath.Join(dir, g.name)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[off+snapshot.RecordHeaderSize] ^= 0xff // a payload byte of a record mid-log
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = Open(dir, Options{SegmentBytes: testSegBytes})
	var ce *snapshot.CorruptError
	if !errors.As(err, &ce) || ce.File != g.name || ce.Offset != off {
		t.Fatalf("Open = %v, want a CorruptError at %s offset %d", err, g.name, off)
	}
}

func TestStore_MissingSegmentIsAnError(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, dir)
	if err := s.StoreLogs(entries(1, 40, 1)); err != nil {
		t.Fatal(err)
	}
	name := s.segs[1].name
	s.Close()
	if err := os.Remove(filepath.Join(dir, name)); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir, Options{}); err == nil {
		t.Fatalf("Open with %s missing succeeded", name)
	}
}

func TestStore_NewerFormatIsRefused(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, dir)
	if err := s.StoreLogs(entries(1, 3, 1)); err != nil {
		t.Fatal(err)
	}
	name := s.segs[0].name
	s.Close()
	b := snapshot.AppendFileHeader(nil, snapshot.LogFormat{Magic: segFormat.Magic, Version: segFormat.Version + 1})
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt(b, 0)
	f.Close()
	_, err = Open(dir, Options{})
	var fe *snapshot.FormatError
	if !errors.As(err, &fe) || fe.File != name {
		t.Fatalf("Open = %v, want a FormatError naming %s", err, name)
	}
}

func TestStore_SecondOpenIsLockedOut(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, dir)
	defer s.Close()
	if _, err := Open(dir, Options{}); !errors.Is(err, snapshot.ErrLocked) {
		t.Fatalf("second Open = %v, want ErrLocked", err)
	}
}

func TestStable_SurvivesReopen(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, dir)
	if _, err := s.Get([]byte("CurrentTerm")); err == nil || err.Error() != "not found" {
		t.Fatalf("Get of a missing key = %v, raft wants \"not found\"", err)
	}
	if _, err := s.GetUint64([]byte("CurrentTerm")); err == nil || err.Error() != "not found" {
		t.Fatalf("GetUint64 of a missing key = %v, raft wants \"not found\"", err)
	}
	if err := s.SetUint64([]byte("CurrentTerm"), 7); err != nil {
		t.Fatal(err)
	}
	if err := s.Set([]byte("LastVoteCand"), []byte("node-2")); err != nil {
		t.Fatal(err)
	}
	if err := s.SetUint64([]byte("CurrentTerm"), 8); err != nil {
		t.Fatal(err)
	}
	s.Close()
	// A temporary file a crash left mid-Set is swept, and the old value holds.
	if err := os.WriteFile(filepath.Join(dir, ".stable123456"), []byte("half"), 0o600); err != nil {
		t.Fatal(err)
	}
	s = openTest(t, dir)
	defer s.Close()
	if v, err := s.GetUint64([]byte("CurrentTerm")); err != nil || v != 8 {
		t.Fatalf("CurrentTerm = %d, %v; want 8", v, err)
	}
	if v, err := s.Get([]byte("LastVoteCand")); err != nil || string(v) != "node-2" {
		t.Fatalf("LastVoteCand = %q, %v", v, err)
	}
	if _, err := os.Stat(filepath.Join(dir, ".stable123456")); !os.IsNotExist(err) {
		t.Fatalf("temporary file not swept: %v", err)
	}
}

func TestStable_DamagedFileIsAnError(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, dir)
	if err := s.SetUint64([]byte("CurrentTerm"), 7); err != nil {
		t.Fatal(err)
	}
	s.Close()
	path := filepath.Join(dir, stableName)
	b, _ := os.ReadFile(path)
	b[len(b)-1] ^= 1
	os.WriteFile(path, b, 0o600)
	if _, err := Open(dir, Options{}); err == nil {
		t.Fatal("Open with a damaged stable file succeeded")
	}
}

func TestStore_InterruptedPrefixDeleteIsFinished(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, dir)
	if err := s.StoreLogs(entries(1, 40, 1)); err != nil {
		t.Fatal(err)
	}
	b := segFirsts(t, dir)[2]
	s.Close()
	// A crash after the first file was written, before any segment went.
	if err := writeFirst(snapshot.OS, dir, b+1); err != nil {
		t.Fatal(err)
	}
	s = openTest(t, dir)
	defer s.Close()
	if f, _ := s.FirstIndex(); f != b+1 {
		t.Fatalf("FirstIndex %d, want %d", f, b+1)
	}
	if got := segFirsts(t, dir); got[0] != b {
		t.Fatalf("segments %v, want those before %d removed", got, b)
	}
}

// TestStore_ReadsDuringWritesAndDeletes reads entries while others are
// stored and the prefix is deleted, as raft's replication does beside its
// main loop and its snapshots. Run it with -race.
func TestStore_ReadsDuringWritesAndDeletes(t *testing.T) {
	s := openTest(t, t.TempDir())
	defer s.Close()
	if err := s.StoreLogs(entries(1, 10, 1)); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	errc := make(chan error, 1)
	go func() {
		defer close(done)
		for i := uint64(11); i <= 400; i += 5 {
			if err := s.StoreLogs(entries(i, i+4, 1)); err != nil {
				errc <- err
				return
			}
			if i%40 == 1 {
				if err := s.DeleteRange(0, i-20); err != nil {
					errc <- err
					return
				}
			}
		}
	}()
	want := entries(1, 404, 1)
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
		}
		first, _ := s.FirstIndex()
		last, _ := s.LastIndex()
		for i := last; i >= first && i+8 > last; i-- {
			var l raft.Log
			err := s.GetLog(i, &l)
			if errors.Is(err, raft.ErrLogNotFound) {
				continue // deleted meanwhile
			}
			if err != nil || !sameLog(&l, want[i-1]) {
				t.Fatalf("GetLog(%d) = %+v, %v", i, l, err)
			}
		}
	}
	select {
	case err := <-errc:
		t.Fatal(err)
	default:
	}
}
