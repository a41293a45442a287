package snapshot_test

import (
	"context"
	"log/slog"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/snapshot"
)

func benchOptions(dir string) snapshot.Options {
	return snapshot.Options{Dir: dir, Logger: slog.New(slog.DiscardHandler)}
}

// fillN adds n copies of entry.
func fillN(n int, entry []byte) func(w *snapshot.SnapshotWriter) error {
	return func(w *snapshot.SnapshotWriter) error {
		for i := 0; i < n; i++ {
			if err := w.Add(entry); err != nil {
				return err
			}
		}
		return nil
	}
}

// BenchmarkAppend runs 64 concurrent appenders with FsyncAlways.
// Each waits until its record is durable.
// It reports durable records per second and how many records share an fsync.
func BenchmarkAppend(b *testing.B) {
	s, _ := MustStart(b, benchOptions(b.TempDir()))
	payload := make([]byte, 150)
	procs := runtime.GOMAXPROCS(0)
	b.SetParallelism((64 + procs - 1) / procs)
	b.ReportAllocs()
	fsyncs := s.Stats().Fsyncs
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		for pb.Next() {
			if err := s.WaitDurable(ctx, s.Append(payload)); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
	b.ReportMetric(float64(b.N)/float64(s.Stats().Fsyncs-fsyncs), "records/fsync")
}

// BenchmarkWriteSnapshot times one snapshot of 1,000,000 entries of 150 bytes.
// It is written, fsynced and renamed into place.
func BenchmarkWriteSnapshot(b *testing.B) {
	const entries = 1_000_000
	s, _ := MustStart(b, benchOptions(b.TempDir()))
	entry := make([]byte, 150)
	b.SetBytes(entries * (4 + 150))
	for b.Loop() {
		lsn := s.Append([]byte("k=v"))
		require.NoError(b, s.WriteSnapshot(lsn, fillN(entries, entry)))
	}
}

// BenchmarkReplay times Open and Replay of a snapshot of 1,000,000 entries of 150 bytes.
// 100,000 log records of 150 bytes follow the snapshot.
func BenchmarkReplay(b *testing.B) {
	const entries, records = 1_000_000, 100_000
	opts := benchOptions(b.TempDir())
	s, _ := MustStart(b, opts)
	payload := make([]byte, 150)
	require.NoError(b, s.WriteSnapshot(s.Append(payload), fillN(entries, payload)))
	for i := 0; i < records; i++ {
		s.Append(payload)
	}
	require.NoError(b, s.Close())
	b.SetBytes(entries*(4+150) + records*(16+150))
	b.ReportAllocs()
	for b.Loop() {
		s, err := snapshot.Open(opts)
		require.NoError(b, err)
		var n int
		_, err = s.Replay(
			func([]byte) error { n++; return nil },
			func(uint64, []byte) error { n++; return nil },
		)
		require.NoError(b, err)
		require.NoError(b, s.Close())
		if n != entries+records {
			b.Fatalf("replayed %d, want %d", n, entries+records)
		}
	}
}
