package logstore

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
)

// The benchmarks put this store beside raft-boltdb/v2 under raft's
// pattern: StoreLogs batches fsynced per call, GetLog of recent entries,
// and a prefix DeleteRange after a snapshot. Each runs in b.TempDir(),
// which must be on a real disk for the fsyncs to mean anything.
// bench/README.md has the command and the numbers.

type benchStore interface {
	raft.LogStore
	Close() error
}

var benchStores = []struct {
	name string
	open func(b *testing.B, dir string) benchStore
}{
	{"own", func(b *testing.B, dir string) benchStore {
		s, err := Open(dir, Options{})
		if err != nil {
			b.Fatal(err)
		}
		return s
	}},
	{"boltdb", func(b *testing.B, dir string) benchStore {
		s, err := raftboltdb.NewBoltStore(filepath.Join(dir, "raft.db"))
		if err != nil {
			b.Fatal(err)
		}
		return s
	}},
}

// benchBatch makes n entries from index first, with size bytes of data.
func benchBatch(first uint64, n, size int) []*raft.Log {
	logs := make([]*raft.Log, n)
	data := make([]byte, size)
	for i := range logs {
		logs[i] = &raft.Log{Index: first + uint64(i), Term: 1, Type: raft.LogCommand, Data: data}
	}
	return logs
}

func BenchmarkStoreLogs(b *testing.B) {
	for _, size := range []int{256, 4096} {
		for _, n := range []int{1, 8, 64} {
			for _, st := range benchStores {
				b.Run(fmt.Sprintf("size=%d/batch=%d/%s", size, n, st.name), func(b *testing.B) {
					s := st.open(b, b.TempDir())
					defer s.Close()
					next := uint64(1)
					b.SetBytes(int64(n * size))
					b.ResetTimer()
					for b.Loop() {
						if err := s.StoreLogs(benchBatch(next, n, size)); err != nil {
							b.Fatal(err)
						}
						next += uint64(n)
					}
				})
			}
		}
	}
}

func BenchmarkGetLogRecent(b *testing.B) {
	const stored, recent = 20000, 256
	for _, st := range benchStores {
		b.Run(st.name, func(b *testing.B) {
			s := st.open(b, b.TempDir())
			defer s.Close()
			for i := uint64(1); i <= stored; i += 500 {
				if err := s.StoreLogs(benchBatch(i, 500, 256)); err != nil {
					b.Fatal(err)
				}
			}
			var l raft.Log
			i := 0
			for b.Loop() {
				if err := s.GetLog(stored-recent+1+uint64(i%recent), &l); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

// BenchmarkDeleteRangePrefix times the compaction after a snapshot: the
// oldest entries go, up to a point inside the log. Between deletes, more
// entries are stored with the timer stopped.
func BenchmarkDeleteRangePrefix(b *testing.B) {
	const per = 1024
	for _, st := range benchStores {
		b.Run(st.name, func(b *testing.B) {
			s := st.open(b, b.TempDir())
			defer s.Close()
			next, first := uint64(1), uint64(1)
			store := func() {
				for range per / 64 {
					if err := s.StoreLogs(benchBatch(next, 64, 256)); err != nil {
						b.Fatal(err)
					}
					next += 64
				}
			}
			store()
			for b.Loop() {
				b.StopTimer()
				store()
				b.StartTimer()
				if err := s.DeleteRange(first, first+per-1); err != nil {
					b.Fatal(err)
				}
				first += per
			}
		})
	}
}
