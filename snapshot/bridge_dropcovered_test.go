package snapshot_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/snapshot"
)

// Bytes after the last record of an older segment, which the next
// segment continues: they hold no record, so RecoverTruncate cuts them
// and loses nothing, before the snapshot or after it. A plain start still
// refuses (spec section 7: only the newest segment has a torn tail).
func TestOpen_JunkAfterAnOlderSegmentsLastRecord(t *testing.T) {
	const n = 58
	for _, tc := range []struct {
		name string
		seg  int // which segment gets the junk
	}{
		{"before the snapshot", 1},
		{"after the snapshot", 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			snappedLog(t, dir, n, 600, 20, 40)
			segs := segments(t, dir)
			require.Greater(t, len(segs), 4)
			path := filepath.Join(dir, segs[tc.seg])
			size := fileSize(t, path)
			modifyFile(t, path, func(b []byte) []byte { return append(b, bytes.Repeat([]byte{0xA5}, 40)...) })

			plain, _ := testOptions(dir)
			plain.SegmentBytes = 600
			_, err := snapshot.Open(plain)
			var ce *snapshot.CorruptError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, segs[tc.seg], ce.File)
			assert.Equal(t, size, ce.Offset)

			opts, logs := truncateOpts(dir)
			opts.SegmentBytes = 600
			s := MustOpen(t, opts)
			assert.Equal(t, after(40, n), replay(t, s))
			assert.Zero(t, s.Lost())
			assert.Equal(t, segs, segments(t, dir), "no segment removed")
			assert.Equal(t, size, fileSize(t, path), "the junk is cut")
			assert.Contains(t, logs.String(), "cuts bytes after the last record of a segment")
			require.NoError(t, s.Close())
			assert.Equal(t, after(40, n), reopen(t, plain), "clean afterwards")
		})
	}
}

// A segment named inside a damaged segment's records, but holding other
// bytes than the damaged one where they overlap (it is not a bridge's
// leftover), is never made the head of the log: the log is cut, loudly,
// rather than replay records that differ from the confirmed ones.
func TestOpen_ForeignOverlapIsNotDropCovered(t *testing.T) {
	dir := t.TempDir()
	snappedLog(t, dir, 58, 600, 20, 40)
	segs := segments(t, dir)
	var seg string // the segment holding record 41
	for _, name := range segs {
		if segFirst(t, name) <= 41 {
			seg = name
		}
	}
	first := segFirst(t, seg)
	bad := first + 1
	require.Less(t, bad+1, uint64(41), "the record after the damage is in the snapshot")
	damage(t, dir, bad, flipPayload)
	b, err := os.ReadFile(filepath.Join(dir, seg))
	require.NoError(t, err)
	// A copy of the records from bad+1 on, with record 41's payload
	// changed and its checksum made good again (a segment without a
	// header, as older binaries wrote).
	tail := slices.Clone(b[offsetOf(first, bad+1):])
	off := offsetOf(bad+1, 41) - segHeader
	n := binary.BigEndian.Uint32(tail[off:])
	tail[off+16] ^= 0x01
	h := crc32.New(crc32.MakeTable(crc32.Castagnoli))
	h.Write(tail[off : off+4])
	h.Write(tail[off+8 : off+16+int64(n)])
	binary.BigEndian.PutUint32(tail[off+4:], h.Sum32())
	foreign := fmt.Sprintf("%020d.log", bad+1)
	require.NoError(t, os.WriteFile(filepath.Join(dir, foreign), tail, 0o600))

	opts, logs := truncateOpts(dir)
	opts.SegmentBytes = 600
	s := MustOpen(t, opts)
	assert.Contains(t, logs.String(), "not bridging")
	assert.NotContains(t, logs.String(), "drops the segments before it")
	assert.Contains(t, logs.String(), "every later record is LOST")
	assert.Positive(t, s.Lost())
	for _, r := range replay(t, s).Records {
		assert.Equal(t, payload(r.LSN), r.Payload, "record %d is the confirmed one", r.LSN)
	}
}

// Damage after which nothing whole resumes in its segment (its last
// record, a zeroed end, the whole file), or a segment missing: when the
// snapshot holds every record up to where the next segment starts, the
// segments before that one are dropped and nothing after the snapshot is
// lost. A read-only Open (inspect) shows the same and removes nothing.
func TestOpen_DropCoveredSegments(t *testing.T) {
	const n = 58
	lastOf := func(t *testing.T, segs []string, i int) uint64 { return segFirst(t, segs[i+1]) - 1 }
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, dir string, segs []string)
	}{
		{"the last record of an older segment", func(t *testing.T, dir string, segs []string) {
			damage(t, dir, lastOf(t, segs, 1), flipPayload)
		}},
		{"an older segment zeroed from its last record on", func(t *testing.T, dir string, segs []string) {
			damage(t, dir, lastOf(t, segs, 1), func(b []byte, off int64) []byte { clear(b[off:]); return b })
		}},
		{"a whole older segment zeroed", func(t *testing.T, dir string, segs []string) {
			damage(t, dir, lastOf(t, segs, 1), func(b []byte, _ int64) []byte { clear(b); return b })
		}},
		{"an older segment missing", func(t *testing.T, dir string, segs []string) {
			require.NoError(t, os.Remove(filepath.Join(dir, segs[1])))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			snappedLog(t, dir, n, 600, 20, 40)
			segs := segments(t, dir)
			require.Greater(t, len(segs), 3)
			require.LessOrEqual(t, segFirst(t, segs[2]), uint64(41), "every record before segment 2 is in snapshot 40")
			tc.damage(t, dir, segs)

			plain, _ := testOptions(dir)
			_, err := snapshot.Open(plain)
			require.Error(t, err, "without RecoverTruncate the damage stops startup")

			ro, _ := truncateOpts(dir)
			ro.ReadOnly = true
			s := MustOpen(t, ro)
			assert.Equal(t, after(40, n), replay(t, s), "read-only: the view a real start leaves")
			assert.Zero(t, s.Lost())
			require.NoError(t, s.Close())
			assert.Contains(t, segments(t, dir), segs[0], "read-only removes nothing")

			opts, logs := truncateOpts(dir)
			s = MustOpen(t, opts)
			assert.Equal(t, after(40, n), replay(t, s), "records 41..58 are confirmed and undamaged")
			assert.Zero(t, s.Lost())
			assert.Contains(t, logs.String(), "RecoverTruncate drops the segments before it")
			assert.Equal(t, segs[2:], segments(t, dir))
			require.Len(t, s.Problems(), 1)
			require.NotNil(t, s.Problems()[0].Bridge)
			assert.Equal(t, segs[2], s.Problems()[0].Bridge.Segment)
			require.NoError(t, s.Close())

			s = MustOpen(t, plain)
			assert.Empty(t, s.Problems(), "the next start is clean")
			assert.Equal(t, after(40, n), replay(t, s))
			require.NoError(t, s.Close())
		})
	}
}
