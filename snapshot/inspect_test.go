package snapshot_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/snapshot"
)

func TestInspect(t *testing.T) {
	dir := t.TempDir()
	opts, _ := testOptions(dir)
	opts.SegmentBytes = 300
	s, _ := MustStart(t, opts)
	appendN(t, s, 10)
	require.NoError(t, s.WriteSnapshot(10, fill("a")))
	appendN(t, s, 10)
	require.NoError(t, s.WriteSnapshot(20, fill("b", "c")))
	waitDurable(t, s, appendN(t, s, 5))
	require.NoError(t, s.Close())

	segs := segments(t, dir)
	newest := filepath.Join(dir, segs[len(segs)-1])
	newestSize := fileSize(t, newest)
	modifyFile(t, newest, func(b []byte) []byte { return append(b, 0, 0, 0) })
	modifyFile(t, filepath.Join(dir, snapFile(20)), func(b []byte) []byte { b[len(b)-1] ^= 1; return b })
	require.NoError(t, os.WriteFile(filepath.Join(dir, "snapshot-00000000000000000025.tmp"), nil, 0o644))
	before := files(t, dir)

	info, err := snapshot.Inspect(opts)
	require.NoError(t, err)
	assert.Equal(t, before, files(t, dir), "Inspect changes nothing")

	require.Len(t, info.Snapshots, 2)
	assert.Equal(t, snapshot.SnapshotInfo{Name: snapFile(10), LSN: 10, Format: 1, Size: info.Snapshots[0].Size, Entries: 1, Valid: true}, info.Snapshots[0])
	assert.False(t, info.Snapshots[1].Valid)
	assert.Contains(t, info.Snapshots[1].Error, "checksum mismatch")
	assert.Equal(t, []string{"snapshot-00000000000000000025.tmp"}, info.TempFiles)

	require.Len(t, info.Segments, len(segs))
	var records int
	for i, seg := range info.Segments {
		assert.Equal(t, segs[i], seg.Name)
		assert.Equal(t, segFirst(t, seg.Name), seg.FirstLSN)
		records += seg.Records
		if i > 0 {
			assert.Equal(t, info.Segments[i-1].LastLSN+1, seg.FirstLSN)
		}
	}
	assert.Equal(t, 25-int(info.Segments[0].FirstLSN)+1, records)
	assert.LessOrEqual(t, info.Segments[0].FirstLSN, uint64(11), "the log after the previous snapshot is kept")
	last := info.Segments[len(info.Segments)-1]
	assert.EqualValues(t, 25, last.LastLSN)
	assert.Equal(t, newestSize+3, last.Size)
	assert.Equal(t, newestSize, last.ValidBytes)

	require.Len(t, info.Problems, 1)
	assert.Equal(t, snapshot.Problem{File: last.Name, Offset: newestSize, Kind: snapshot.ProblemTorn,
		Detail: "incomplete record header (3 bytes)", Bytes: 3}, info.Problems[0])
	assert.Equal(t, snapFile(10), info.LoadSnapshot)
	assert.EqualValues(t, 25, info.LastLSN)
	assert.Empty(t, info.OpenError)

	t.Run("corruption is reported, not returned", func(t *testing.T) {
		first := filepath.Join(dir, segs[len(segs)-2])
		modifyFile(t, first, func(b []byte) []byte { b[20] ^= 1; return b })
		info, err := snapshot.Inspect(opts)
		require.NoError(t, err)
		require.Len(t, info.Problems, 2)
		assert.Equal(t, snapshot.ProblemCorrupt, info.Problems[0].Kind)
		assert.Equal(t, segs[len(segs)-2], info.Problems[0].File)
		assert.Contains(t, info.OpenError, "offset 16") // the first record, after the segment header
	})
}

// Inspect says what RecoverTruncate would do with a dir Open refuses:
// bridge corruption a snapshot holds, losing nothing, or cut the log.
func TestInspect_RecoverTruncate(t *testing.T) {
	t.Run("clean: nothing to say", func(t *testing.T) {
		dir := t.TempDir()
		opts := snappedLog(t, dir, 58, 0, 20, 40)
		info, err := snapshot.Inspect(opts)
		require.NoError(t, err)
		assert.Empty(t, info.OpenError)
		assert.Nil(t, info.RecoverTruncate)
	})
	t.Run("covered: bridged, nothing lost", func(t *testing.T) {
		dir := t.TempDir()
		opts := snappedLog(t, dir, 58, 0, 20, 40)
		file, off := damage(t, dir, 5, flipPayload)
		before := files(t, dir)
		info, err := snapshot.Inspect(opts)
		require.NoError(t, err)
		assert.Equal(t, before, files(t, dir), "Inspect changes nothing")
		assert.Contains(t, info.OpenError, fmt.Sprintf("corrupt log segment %s at offset %d", file, off))
		assert.Equal(t, &snapshot.RecoverInfo{LoadSnapshot: snapFile(40), LastLSN: 58}, info.RecoverTruncate)
		require.Len(t, info.Problems, 1)
		assert.Equal(t, &snapshot.Bridge{FirstLSN: 5, LastLSN: 5, ResumeOffset: offsetOf(1, 6), Snapshot: snapFile(40),
			Segment: "00000000000000000006.log"}, info.Problems[0].Bridge)
	})
	t.Run("not covered: cut, records lost", func(t *testing.T) {
		dir := t.TempDir()
		opts := snappedLog(t, dir, 58, 0, 20, 40)
		damage(t, dir, 45, flipPayload)
		info, err := snapshot.Inspect(opts)
		require.NoError(t, err)
		assert.NotEmpty(t, info.OpenError)
		require.NotNil(t, info.RecoverTruncate)
		assert.Empty(t, info.RecoverTruncate.OpenError)
		assert.EqualValues(t, 44, info.RecoverTruncate.LastLSN)
		assert.Positive(t, info.RecoverTruncate.Lost)
		require.Len(t, info.Problems, 1)
		assert.Nil(t, info.Problems[0].Bridge)
	})
}
