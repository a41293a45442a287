package snapshot_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/snapshot"
)

// writeLog creates a log of n records payload(1..n) in dir and returns
// the options used.
func writeLog(t *testing.T, dir string, n int, segBytes int64) snapshot.Options {
	t.Helper()
	opts, _ := testOptions(dir)
	opts.SegmentBytes = segBytes
	s, _ := MustStart(t, opts)
	waitDurable(t, s, appendN(t, s, n))
	require.NoError(t, s.Close())
	return opts
}

// segHeader is the size of a log segment's file header.
const segHeader = 16

// offsetOf returns the offset of record lsn in a segment starting at first.
func offsetOf(first, lsn uint64) int64 {
	off := int64(segHeader)
	for l := first; l < lsn; l++ {
		off += recordSize(l)
	}
	return off
}

func segFirst(t testing.TB, name string) uint64 {
	var first uint64
	_, err := fmt.Sscanf(name, "%020d.log", &first)
	require.NoError(t, err)
	return first
}

func TestOpen_TornTail(t *testing.T) {
	const n = 10
	tests := []struct {
		name string
		tear func([]byte) []byte
		keep uint64 // records left
	}{
		{"record runs past the end", func(b []byte) []byte {
			var h [16]byte
			binary.BigEndian.PutUint32(h[:], 100)
			return append(append(b, h[:]...), "only part of it"...)
		}, n},
		{"incomplete header", func(b []byte) []byte { return append(b, 0, 0, 0, 9, 1, 2, 3) }, n},
		{"bad checksum on the last record", func(b []byte) []byte {
			b[len(b)-3] ^= 0xff
			return b
		}, n - 1},
		{"zero tail", func(b []byte) []byte { return append(b, make([]byte, 4096)...) }, n},
		{"record runs past the end, garbage after its start", func(b []byte) []byte {
			var h [16]byte
			binary.BigEndian.PutUint32(h[:], 1<<24) // an impossible length, as random bytes give
			return append(append(b, h[:]...), "garbage that holds no whole record"...)
		}, n},
		{"last record zeroed, then zero padding", func(b []byte) []byte {
			clear(b[offsetOf(1, n):])
			return append(b, make([]byte, 100)...)
		}, n - 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeLog(t, dir, n, 0)
			seg := filepath.Join(dir, segments(t, dir)[0])
			modifyFile(t, seg, tt.tear)

			opts, logs := testOptions(dir)
			s := MustOpen(t, opts)
			assert.Contains(t, logs.String(), "torn tail")
			assert.Equal(t, offsetOf(1, tt.keep+1), fileSize(t, seg), "torn tail cut off")
			assert.Equal(t, wantRecords(1, tt.keep), replay(t, s).Records)

			s.Start(nil, nil)
			waitDurable(t, s, appendN(t, s, 5))
			require.NoError(t, s.Close())
			assert.Equal(t, wantRecords(1, tt.keep+5), reopen(t, opts).Records, "log continues after the cut")
		})
	}
}

func TestOpen_Corruption(t *testing.T) {
	const n = 40
	tests := []struct {
		name    string
		corrupt func(t *testing.T, dir string, segs []string) (file string, off int64)
	}{
		{"bad checksum mid newest segment", func(t *testing.T, dir string, segs []string) (string, int64) {
			name := segs[len(segs)-1]
			first := segFirst(t, name)
			off := offsetOf(first, first+1)
			modifyFile(t, filepath.Join(dir, name), func(b []byte) []byte { b[off+20] ^= 1; return b })
			return name, off
		}},
		{"bad checksum on the last record of an older segment", func(t *testing.T, dir string, segs []string) (string, int64) {
			name := segs[0]
			path := filepath.Join(dir, name)
			size := fileSize(t, path)
			modifyFile(t, path, func(b []byte) []byte { b[size-1] ^= 1; return b })
			return name, size - recordSize(segFirst(t, segs[1])-1)
		}},
		{"older segment cut short", func(t *testing.T, dir string, segs []string) (string, int64) {
			name := segs[1]
			path := filepath.Join(dir, name)
			size := fileSize(t, path)
			require.NoError(t, os.Truncate(path, size-5))
			return name, size - recordSize(segFirst(t, segs[2])-1)
		}},
		{"flipped bit in a length mid newest segment", func(t *testing.T, dir string, segs []string) (string, int64) {
			// The record now runs past the end of the file, like a torn
			// one, but whole records follow it: corrupt, not torn.
			name := segs[len(segs)-1]
			first := segFirst(t, name)
			off := offsetOf(first, first+1)
			modifyFile(t, filepath.Join(dir, name), func(b []byte) []byte { b[off] ^= 1; return b })
			return name, off
		}},
		{"missing middle segment", func(t *testing.T, dir string, segs []string) (string, int64) {
			require.NoError(t, os.Remove(filepath.Join(dir, segs[1])))
			return segs[2], 0
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeLog(t, dir, n, 300)
			segs := segments(t, dir)
			require.Greater(t, len(segs), 3)
			file, off := tt.corrupt(t, dir, segs)
			before := files(t, dir)

			opts, _ := testOptions(dir)
			_, err := snapshot.Open(opts)
			require.ErrorIs(t, err, snapshot.ErrCorrupt)
			var ce *snapshot.CorruptError
			require.True(t, errors.As(err, &ce))
			assert.Equal(t, file, ce.File)
			assert.Equal(t, off, ce.Offset)
			assert.Contains(t, err.Error(), file)
			assert.Contains(t, err.Error(), fmt.Sprintf("offset %d", off))
			assert.Equal(t, before, files(t, dir), "a refused Open changes nothing")
		})
	}
}

func TestOpen_RecoverTruncate(t *testing.T) {
	const n = 40
	dir := t.TempDir()
	writeLog(t, dir, n, 300)
	segs := segments(t, dir)
	require.Greater(t, len(segs), 3)
	// Corrupt the second record of the second segment.
	first := segFirst(t, segs[1])
	off := offsetOf(first, first+1)
	modifyFile(t, filepath.Join(dir, segs[1]), func(b []byte) []byte { b[off+17] ^= 1; return b })

	opts, logs := testOptions(dir)
	opts.RecoverTruncate = true
	opts.SegmentBytes = 300
	s := MustOpen(t, opts)
	assert.Contains(t, logs.String(), "LOST")
	assert.Contains(t, logs.String(), segs[2], "the dropped segments are named")
	assert.Equal(t, segs[:2], segments(t, dir), "later segments deleted")
	assert.Equal(t, off, fileSize(t, filepath.Join(dir, segs[1])))
	assert.Equal(t, wantRecords(1, first), replay(t, s).Records)
	lost := n - first // the records after the corrupt one's predecessor
	assert.GreaterOrEqual(t, s.Lost(), uint64(lost), "an upper bound of the records dropped")
	assert.Less(t, s.Lost(), uint64(20*lost), "not wildly above it")

	s.Start(nil, nil)
	waitDurable(t, s, appendN(t, s, 3))
	require.NoError(t, s.Close())
	opts.RecoverTruncate = false
	assert.Equal(t, wantRecords(1, first+3), reopen(t, opts).Records)

	// The caller crashed before making up for the loss (no ClearLost):
	// the next Open reports it again, though the log is now whole.
	dropped := s.Lost()
	kept, err := os.ReadFile(filepath.Join(dir, "lost-records"))
	require.NoError(t, err)
	assert.Equal(t, fmt.Sprintf("apollo11 lost-records 1\n%d\n", dropped), string(kept), "the count, after its format version")
	s = MustOpen(t, opts)
	assert.Equal(t, dropped, s.Lost(), "kept in the data dir until cleared")
	require.NoError(t, s.ClearLost())
	assert.Zero(t, s.Lost())
	require.NoError(t, s.Close())
	s = MustOpen(t, opts)
	assert.Zero(t, s.Lost(), "cleared for good")
	require.NoError(t, s.Close())
}

func TestOpen_SweepsTmp(t *testing.T) {
	dir := t.TempDir()
	writeLog(t, dir, 3, 0)
	for _, name := range []string{"snapshot-00000000000000000002.tmp", "00000000000000000004.log.tmp",
		".snapshot-000000000000000000025577006791947779410", ".00000000000000000004.log42",
		".snapshot-00000000000000000002-tasks7", ".snapshot-00000000000000000002-state12", ".lost-records3"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte("partial"), 0o644))
	}
	// Not ours: an operator's dot files, NFS placeholders, a temporary
	// file's name without renameio's random suffix.
	kept := []string{".backup2", ".keep", ".lost-records", ".nfs000000000012ab0000000001", ".nfs1234",
		".notes-2026-12-01", ".snapshot-00000000000000000002", ".snapshot-7"}
	for _, name := range kept {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), nil, 0o644))
	}
	opts, logs := testOptions(dir)
	assert.Equal(t, wantRecords(1, 3), reopen(t, opts).Records)
	assert.Equal(t, kept, temps(t, dir))
	assert.Contains(t, logs.String(), "removed leftover temporary file")
}

func TestOpen_ReadOnly(t *testing.T) {
	dir := t.TempDir()
	opts := writeLog(t, dir, 30, 300)
	s, _ := MustStart(t, opts)
	require.NoError(t, s.WriteSnapshot(20, fill("a", "b")))
	require.NoError(t, s.Close())
	segs := segments(t, dir)
	modifyFile(t, filepath.Join(dir, segs[len(segs)-1]), func(b []byte) []byte { return append(b, 1, 2, 3) })
	require.NoError(t, os.WriteFile(filepath.Join(dir, "snapshot-00000000000000000030.tmp"), []byte("x"), 0o644))
	before := files(t, dir)

	ro, _ := testOptions(dir)
	ro.ReadOnly = true
	s = MustOpen(t, ro)
	r := replay(t, s)
	assert.Equal(t, uint64(20), r.SnapLSN)
	assert.Equal(t, []string{"a", "b"}, r.Entries)
	assert.Equal(t, wantRecords(21, 30), r.Records)
	assert.Zero(t, s.Append([]byte("x")))
	assert.ErrorIs(t, s.WriteSnapshot(30, fill()), snapshot.ErrReadOnly)
	assert.Panics(t, func() { s.Start(nil, nil) })
	require.NoError(t, s.Close())
	_, err := snapshot.Inspect(ro)
	require.NoError(t, err)
	assert.Equal(t, before, files(t, dir), "read-only Open, Replay, Close and Inspect change nothing")

	t.Run("missing dir is not created", func(t *testing.T) {
		missing := filepath.Join(t.TempDir(), "nope")
		ro.Dir = missing
		_, err := snapshot.Open(ro)
		require.Error(t, err)
		assert.NoDirExists(t, missing)
	})
}

func TestStore_ReplayMissingLog(t *testing.T) {
	dir := t.TempDir()
	writeLog(t, dir, 40, 300)
	segs := segments(t, dir)
	require.NoError(t, os.Remove(filepath.Join(dir, segs[0])))

	opts, _ := testOptions(dir)
	s := MustOpen(t, opts)
	_, err := s.Replay(nil, nil)
	require.ErrorIs(t, err, snapshot.ErrMissingLog)
	assert.Contains(t, err.Error(), segs[1], "names the first segment left")
	assert.Contains(t, err.Error(), "no valid snapshot")
	assert.Zero(t, s.Append([]byte("x")), "no appends on a store that cannot replay")
	assert.Panics(t, func() { s.Start(nil, nil) })
}
