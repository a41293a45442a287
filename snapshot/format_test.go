package snapshot_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/snapshot"
)

const segMagic = "\xffA11LOG\x00"

// segHeaderBytes is a log segment's file header of the given version.
func segHeaderBytes(version uint32) []byte {
	b := binary.BigEndian.AppendUint32([]byte(segMagic), version)
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli)))
}

// stripHeaders turns every segment of dir into the format of binaries
// before format versions: records from the first byte.
func stripHeaders(t *testing.T, dir string) {
	for _, seg := range segments(t, dir) {
		modifyFile(t, filepath.Join(dir, seg), func(b []byte) []byte {
			require.Equal(t, segHeaderBytes(1), b[:segHeader], seg)
			return b[segHeader:]
		})
	}
}

// Every new segment starts with its format version.
func TestSegment_StartsWithFormatVersion(t *testing.T) {
	dir := t.TempDir()
	writeLog(t, dir, 30, 300)
	segs := segments(t, dir)
	require.Greater(t, len(segs), 2)
	for _, seg := range segs {
		b, err := os.ReadFile(filepath.Join(dir, seg))
		require.NoError(t, err)
		assert.Equal(t, segHeaderBytes(1), b[:segHeader], seg)
	}
}

// A data dir of a binary before format versions (segments without a
// header) is read whole; new records go to a new segment, with a header,
// and the old ones are never appended to.
func TestOpen_SegmentsWithoutHeader(t *testing.T) {
	dir := t.TempDir()
	snappedLog(t, dir, 40, 600, 20)
	stripHeaders(t, dir)
	old := segments(t, dir)
	sizes := map[string]int64{}
	for _, seg := range old {
		sizes[seg] = fileSize(t, filepath.Join(dir, seg))
	}

	opts, _ := testOptions(dir)
	opts.SegmentBytes = 600
	s, r := MustStart(t, opts)
	assert.Equal(t, after(20, 40), r)
	waitDurable(t, s, appendN(t, s, 5))
	require.NoError(t, s.Close())

	segs := segments(t, dir)
	require.Len(t, segs, len(old)+1)
	for _, seg := range old {
		assert.Equal(t, sizes[seg], fileSize(t, filepath.Join(dir, seg)), "%s is left as it was", seg)
	}
	b, err := os.ReadFile(filepath.Join(dir, segs[len(segs)-1]))
	require.NoError(t, err)
	assert.Equal(t, segHeaderBytes(1), b[:segHeader])
	assert.Equal(t, after(20, 45), reopen(t, opts))
}

// The newest segment, created but cut short in its header by a crash (or
// left empty by an older binary), is torn: it is replaced by a segment
// with a header of the same name, and nothing is lost.
func TestOpen_TornSegmentHeader(t *testing.T) {
	for _, tail := range [][]byte{nil, []byte(segMagic[:5]), segHeaderBytes(1)[:12]} {
		dir := t.TempDir()
		writeLog(t, dir, 10, 0)
		torn := filepath.Join(dir, "00000000000000000011.log")
		require.NoError(t, os.WriteFile(torn, tail, 0o600))
		opts, _ := testOptions(dir)
		s, r := MustStart(t, opts)
		assert.Equal(t, wantRecords(1, 10), r.Records, "tail %q", tail)
		waitDurable(t, s, appendN(t, s, 2))
		require.NoError(t, s.Close())
		assert.Equal(t, wantRecords(1, 12), reopen(t, opts).Records, "tail %q", tail)
		b, err := os.ReadFile(torn)
		require.NoError(t, err)
		assert.Equal(t, segHeaderBytes(1), b[:segHeader], "tail %q", tail)
	}
}

// A damaged header of a segment that is not the newest is corruption.
func TestOpen_CorruptSegmentHeader(t *testing.T) {
	dir := t.TempDir()
	writeLog(t, dir, 30, 300)
	segs := segments(t, dir)
	modifyFile(t, filepath.Join(dir, segs[0]), func(b []byte) []byte { b[9] ^= 1; return b })
	opts, _ := testOptions(dir)
	_, err := snapshot.Open(opts)
	var ce *snapshot.CorruptError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, segs[0], ce.File)
	assert.Zero(t, ce.Offset)
	assert.Contains(t, ce.Reason, "segment header")
}

// A segment or a snapshot of a newer format stops Open with an error
// naming the file and both versions, rather than being read as damage
// (a snapshot is not skipped for an older one either).
func TestOpen_RefusesNewerFormat(t *testing.T) {
	t.Run("segment", func(t *testing.T) {
		dir := t.TempDir()
		writeLog(t, dir, 30, 300)
		segs := segments(t, dir)
		name := segs[1]
		modifyFile(t, filepath.Join(dir, name), func(b []byte) []byte { return append(segHeaderBytes(2), b[segHeader:]...) })
		checkNewer(t, dir, name, 2, 1)
	})
	t.Run("snapshot", func(t *testing.T) {
		dir := t.TempDir()
		snappedLog(t, dir, 40, 0, 20, 30)
		name := snapFile(30)
		modifyFile(t, filepath.Join(dir, name), func(b []byte) []byte {
			binary.BigEndian.PutUint32(b[8:12], 4) // 2 and 3 are an incremental snapshot's manifest
			return resealTrailer(b)
		})
		checkNewer(t, dir, name, 4, 3)
	})
}

// resealTrailer rewrites the trailer checksum of a snapshot, manifest or
// part, as a newer binary writing that file would have.
func resealTrailer(b []byte) []byte {
	n := len(b) - 4
	binary.BigEndian.PutUint32(b[n:], crc32.Checksum(b[:n], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// A flipped version byte in the newest snapshot, whose checksum then
// fails, is damage, not a newer format: startup falls back to the
// previous snapshot and the log, as for any other damage.
func TestOpen_FlippedSnapshotVersionFallsBack(t *testing.T) {
	for _, flip := range []func(b []byte){
		func(b []byte) { b[8] ^= 0x80 },
		func(b []byte) { b[11] = 4 },
	} {
		dir := t.TempDir()
		snappedLog(t, dir, 40, 0, 20, 30)
		modifyFile(t, filepath.Join(dir, snapFile(30)), func(b []byte) []byte { flip(b); return b })
		opts, logs := testOptions(dir)
		assert.Equal(t, after(20, 40), reopen(t, opts))
		assert.Contains(t, logs.String(), "snapshot is invalid")
	}
}

// When the log cannot cover the fallback, the refusal is the coverage
// one, naming the missing records, not a newer format.
func TestOpen_FlippedSnapshotVersionLogCannotCover(t *testing.T) {
	dir := t.TempDir()
	snappedLog(t, dir, 40, 0, 20, 30)
	modifyFile(t, filepath.Join(dir, snapFile(30)), func(b []byte) []byte { b[11] = 4; return b })
	for _, seg := range segments(t, dir) {
		require.NoError(t, os.Remove(filepath.Join(dir, seg)))
	}
	opts, _ := testOptions(dir)
	s := MustOpen(t, opts)
	_, err := s.Replay(nil, nil)
	require.ErrorIs(t, err, snapshot.ErrMissingLog)
	assert.NotErrorIs(t, err, snapshot.ErrNewerFormat)
	assert.Contains(t, err.Error(), "records 21..")
	require.NoError(t, s.Close())
}

func checkNewer(t *testing.T, dir, name string, version, known uint32) {
	t.Helper()
	for _, truncate := range []bool{false, true} {
		opts, _ := testOptions(dir)
		opts.RecoverTruncate = truncate
		_, err := snapshot.Open(opts)
		require.ErrorIs(t, err, snapshot.ErrNewerFormat)
		var fe *snapshot.FormatError
		require.True(t, errors.As(err, &fe))
		assert.Equal(t, snapshot.FormatError{File: name, Version: version, Known: known}, *fe)
		assert.Contains(t, err.Error(), fmt.Sprintf("%s has format version %d, and this binary reads up to version %d", name, version, known))
	}
}
