package snapshot_test

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/snapshot"
)

// fuzzDirSeed writes a real data dir (records over two segments, and a
// snapshot taken in the middle) and returns its files as FuzzOpen's
// arguments.
func fuzzDirSeed(tb testing.TB, records, snapAt int) (seg1 []byte, seg2First uint64, seg2 []byte, snapLSN uint64, snap []byte) {
	dir := tb.TempDir()
	opts := snapshot.Options{Dir: dir, SegmentBytes: 400, Logger: slog.New(slog.DiscardHandler)}
	s, _ := MustStart(tb, opts)
	for i := 1; i <= records; i++ {
		last := appendN(tb, s, 1)
		if i == snapAt {
			waitDurable(tb, s, last)
			require.NoError(tb, s.WriteSnapshot(last, fill("entry one", "entry=two")))
			snapLSN = last
		}
	}
	waitDurable(tb, s, s.LastLSN())
	require.NoError(tb, s.Close())
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(tb, err)
		return b
	}
	segs := segments(tb, dir)
	require.LessOrEqual(tb, len(segs), 2, "the seed must fit FuzzOpen's two segments")
	seg1 = read(segs[0])
	if len(segs) > 1 {
		seg2First = segFirst(tb, segs[len(segs)-1])
		seg2 = read(segs[len(segs)-1])
	}
	if snapLSN != 0 {
		snap = read(fmt.Sprintf("snapshot-%020d", snapLSN))
	}
	return seg1, seg2First, seg2, snapLSN, snap
}

// noSyncFS is the OS file system with fsync turned off: FuzzOpen tests
// how files are read, not how they survive a crash, and an fsync per run
// would make it a hundred times slower.
type noSyncFS struct{ snapshot.FS }

type noSyncFile struct{ snapshot.File }

func (noSyncFile) Sync() error { return nil }

func (f noSyncFS) OpenFile(name string, flag int, perm fs.FileMode) (snapshot.File, error) {
	file, err := f.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return noSyncFile{file}, nil
}

func (noSyncFS) SyncDir(string) error { return nil }

// FuzzOpen: whatever a data dir holds (two log segments and a snapshot
// of any content), Open refuses it with an error or opens it, never
// panics; RecoverTruncate opens whatever has no snapshot problem; an
// opened store replays records with consecutive LSNs after the snapshot's,
// takes a new record, and after a reopen replays that record last.
// Inspect, read-only, never panics either.
func FuzzOpen(f *testing.F) {
	for _, c := range []struct{ records, snapAt int }{{3, 0}, {12, 5}, {12, 12}} {
		seg1, seg2First, seg2, snapLSN, snap := fuzzDirSeed(f, c.records, c.snapAt)
		f.Add(seg1, seg2First, seg2, snapLSN, snap)
	}
	f.Add([]byte{}, uint64(0), []byte{}, uint64(0), []byte{})
	f.Fuzz(func(t *testing.T, seg1 []byte, seg2First uint64, seg2 []byte, snapLSN uint64, snap []byte) {
		dir := t.TempDir()
		write := func(name string, b []byte) {
			require.NoError(t, os.WriteFile(filepath.Join(dir, name), b, 0o600))
		}
		write(fmt.Sprintf("%020d.log", 1), seg1)
		if seg2First > 1 {
			write(fmt.Sprintf("%020d.log", seg2First), seg2)
		}
		if snapLSN > 0 {
			write(fmt.Sprintf("snapshot-%020d", snapLSN), snap)
		}
		quiet := slog.New(slog.DiscardHandler)
		_, _ = snapshot.Inspect(snapshot.Options{Dir: dir, ReadOnly: true, Logger: quiet})
		for _, truncate := range []bool{false, true} {
			opts := snapshot.Options{Dir: dir, FS: noSyncFS{snapshot.OS}, Logger: quiet, SegmentBytes: 400,
				RecoverTruncate: truncate}
			s, err := snapshot.Open(opts)
			if err != nil {
				var ce *snapshot.CorruptError
				require.False(t, truncate && errors.As(err, &ce), "RecoverTruncate still refused: %v", err)
				continue
			}
			var lsns []uint64
			base, err := s.Replay(func([]byte) error { return nil },
				func(lsn uint64, _ []byte) error { lsns = append(lsns, lsn); return nil })
			if err != nil {
				require.NoError(t, s.Close())
				continue
			}
			for i, lsn := range lsns {
				require.Equal(t, base+1+uint64(i), lsn, "replayed LSNs %v after snapshot %d", lsns, base)
			}
			s.Start(nil, nil)
			want := s.LastLSN() + 1
			require.Equal(t, want, s.Append([]byte("type=new")))
			waitDurable(t, s, want)
			require.NoError(t, s.Close())

			s, err = snapshot.Open(opts)
			require.NoError(t, err, "reopening after an append")
			var last uint64
			var lastPayload string
			_, err = s.Replay(nil, func(lsn uint64, p []byte) error { last, lastPayload = lsn, string(p); return nil })
			require.NoError(t, err)
			require.Equal(t, want, last)
			require.Equal(t, "type=new", lastPayload)
			require.NoError(t, s.Close())
			return
		}
	})
}
