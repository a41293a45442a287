package snapshot_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/snapshot"
)

// RecoverTruncate bridges corruption that the base snapshot covers: the
// records after the snapshot all stay; corruption it does not cover cuts
// the log as before.

// snappedLog writes records 1..n into dir, with a snapshot (one entry,
// "state@<lsn>") at each LSN of snaps, and returns the options used.
func snappedLog(t *testing.T, dir string, n uint64, segBytes int64, snaps ...uint64) snapshot.Options {
	t.Helper()
	opts, _ := testOptions(dir)
	opts.SegmentBytes = segBytes
	s, _ := MustStart(t, opts)
	for _, at := range append(slices.Clone(snaps), n) {
		if at > s.LastLSN() {
			waitDurable(t, s, appendN(t, s, int(at-s.LastLSN())))
		}
		if slices.Contains(snaps, at) {
			require.NoError(t, s.WriteSnapshot(at, fill(fmt.Sprintf("state@%d", at))))
		}
	}
	require.NoError(t, s.Close())
	return opts
}

// recordAt returns the segment holding record lsn and its offset there.
func recordAt(t *testing.T, dir string, lsn uint64) (string, int64) {
	t.Helper()
	var name string
	for _, seg := range segments(t, dir) {
		if segFirst(t, seg) <= lsn {
			name = seg
		}
	}
	require.NotEmpty(t, name, "no segment holds record %d", lsn)
	return name, offsetOf(segFirst(t, name), lsn)
}

// damage applies fn to the bytes of the segment holding record lsn, given
// that record's offset, and returns the segment and the offset.
func damage(t *testing.T, dir string, lsn uint64, fn func(b []byte, off int64) []byte) (string, int64) {
	t.Helper()
	name, off := recordAt(t, dir, lsn)
	modifyFile(t, filepath.Join(dir, name), func(b []byte) []byte { return fn(b, off) })
	return name, off
}

// flipPayload flips a bit in the payload of the record at off.
func flipPayload(b []byte, off int64) []byte { b[off+16+3] ^= 0x20; return b }

// after is what Replay should deliver from snapshot lsn up to last.
func after(snap, last uint64) replayed {
	return replayed{SnapLSN: snap, Entries: []string{fmt.Sprintf("state@%d", snap)}, Records: wantRecords(snap+1, last)}
}

func truncateOpts(dir string) (snapshot.Options, fmt.Stringer) {
	opts, logs := testOptions(dir)
	opts.RecoverTruncate = true
	return opts, logs
}

func TestOpen_BridgeCovered(t *testing.T) {
	const n = 58
	tests := []struct {
		name   string
		lsn    uint64 // the first record damaged
		fn     func(b []byte, off int64) []byte
		resume uint64 // the record the log resumes with
	}{
		{"flipped payload byte", 5, flipPayload, 6},
		{"flipped length bit: the record runs on into the next ones", 5, func(b []byte, off int64) []byte {
			b[off+2] ^= 1
			return b
		}, 6},
		{"flipped high length bit: the record runs past the end", 5, func(b []byte, off int64) []byte {
			b[off] ^= 0x40
			return b
		}, 6},
		{"a zeroed block over records 5 to 10", 5, func(b []byte, off int64) []byte {
			clear(b[off : offsetOf(1, 11)-3])
			return b
		}, 11},
		{"records 5 to 7 gone", 5, func(b []byte, off int64) []byte {
			return append(b[:off:off], b[offsetOf(1, 8):]...)
		}, 8},
		{"valid checksum, wrong LSN: record 5 replaced by a copy of record 4", 5, func(b []byte, off int64) []byte {
			require.Equal(t, recordSize(4), recordSize(5))
			copy(b[off:], b[off-recordSize(4):off])
			return b
		}, 6},
		{"two damaged records, both covered", 5, func(b []byte, off int64) []byte {
			b[offsetOf(1, 30)+20] ^= 1
			return flipPayload(b, off)
		}, 31},
		{"damage just before the first record the snapshot lacks", 40, flipPayload, 41},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			snappedLog(t, dir, n, 0, 20, 40)
			require.Equal(t, []string{"00000000000000000001.log"}, segments(t, dir))
			file, off := damage(t, dir, tt.lsn, tt.fn)
			before := files(t, dir)
			resumeAt := offsetOf(1, tt.resume)
			if tt.name == "records 5 to 7 gone" {
				resumeAt = off
			}

			// Without RecoverTruncate: refused, naming file and offset.
			plain, _ := testOptions(dir)
			_, err := snapshot.Open(plain)
			var ce *snapshot.CorruptError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, file, ce.File)
			assert.Equal(t, off, ce.Offset)
			assert.Equal(t, before, files(t, dir), "a refused Open changes nothing")

			opts, logs := truncateOpts(dir)
			s := MustOpen(t, opts)
			assert.Equal(t, after(40, n), replay(t, s), "every record after the snapshot is kept")
			assert.Zero(t, s.Lost(), "nothing is lost")
			assert.EqualValues(t, n, s.LastLSN())
			target := fmt.Sprintf("%020d.log", tt.resume)
			assert.Equal(t, []string{target}, segments(t, dir), "the damaged segment is replaced")
			problems := s.Problems()
			require.Len(t, problems, 1)
			assert.Equal(t, file, problems[0].File)
			assert.Equal(t, off, problems[0].Offset)
			assert.Equal(t, snapshot.ProblemCorrupt, problems[0].Kind)
			assert.Equal(t, &snapshot.Bridge{FirstLSN: tt.lsn, LastLSN: tt.resume - 1, ResumeOffset: resumeAt,
				Snapshot: snapFile(40), Segment: target}, problems[0].Bridge)
			log := logs.String()
			assert.Contains(t, log, "RecoverTruncate bridges it")
			assert.Contains(t, log, fmt.Sprintf("file=%s offset=%d", file, off))
			assert.Contains(t, log, fmt.Sprintf("skipped_lsns=%d..%d", tt.lsn, tt.resume-1))
			assert.Contains(t, log, "snapshot="+snapFile(40))
			assert.NotContains(t, log, "LOST")
			assert.NoFileExists(t, filepath.Join(dir, "lost-records"))

			// The log goes on in the rewritten segment.
			s.Start(nil, nil)
			waitDurable(t, s, appendN(t, s, 3))
			require.NoError(t, s.Close())
			assert.Equal(t, []string{target}, segments(t, dir))

			// A second Open, plain, is clean and replays the same.
			plain, logs2 := testOptions(dir)
			s = MustOpen(t, plain)
			assert.Empty(t, s.Problems())
			assert.Equal(t, after(40, n+3), replay(t, s))
			var all []rec
			require.NoError(t, s.ReadLog(func(lsn uint64, p []byte) error { all = append(all, rec{lsn, string(p)}); return nil }))
			assert.Equal(t, wantRecords(tt.resume, n+3), all, "the log holds every record from the resumed one on")
			require.NoError(t, s.Close())
			assert.NotContains(t, logs2.String(), "level=WARN")
		})
	}
}

// The previous snapshot needs the records after it: if the log now starts
// past them, the operator is told it can no longer be a fallback.
func TestOpen_BridgeWarnsOfLostFallback(t *testing.T) {
	dir := t.TempDir()
	snappedLog(t, dir, 58, 0, 20, 40)
	damage(t, dir, 5, func(b []byte, off int64) []byte { clear(b[off:offsetOf(1, 30)]); return b })
	opts, logs := truncateOpts(dir)
	s := MustOpen(t, opts)
	assert.Equal(t, after(40, 58), replay(t, s))
	assert.Contains(t, logs.String(), "can no longer be a fallback")
	assert.Contains(t, logs.String(), "snapshot="+snapFile(20))
	require.NoError(t, s.Close())

	dir = t.TempDir()
	snappedLog(t, dir, 58, 0, 20, 40)
	damage(t, dir, 5, flipPayload)
	opts, logs = truncateOpts(dir)
	s = MustOpen(t, opts)
	assert.Equal(t, after(40, 58), replay(t, s))
	assert.NotContains(t, logs.String(), "fallback", "snapshot 20 needs records 21 on, still there")
	require.NoError(t, s.Close())
}

// Corruption the base snapshot does not cover, or whose records do not
// resume in time, cuts the log exactly as before: later records are lost
// and counted.
func TestOpen_BridgeFallsBackToCut(t *testing.T) {
	const n = 58
	tests := []struct {
		name  string
		snaps []uint64
		setup func(t *testing.T, dir string) (file string, off int64)
		want  replayed
	}{
		{"not covered by the snapshot", []uint64{20, 40}, func(t *testing.T, dir string) (string, int64) {
			return damage(t, dir, 45, flipPayload)
		}, after(40, 44)},
		{"the corrupt record is the first the snapshot lacks", []uint64{20, 40}, func(t *testing.T, dir string) (string, int64) {
			// Even with a good copy of record 41 after the bad one: only
			// corruption the snapshot covers is bridged.
			return damage(t, dir, 41, func(b []byte, off int64) []byte {
				bad := flipPayload(slices.Clone(b[off:off+recordSize(41)]), 0)
				return slices.Concat(b[:off], bad, b[off:])
			})
		}, after(40, 40)},
		{"resumes past the record after the snapshot", []uint64{20, 40}, func(t *testing.T, dir string) (string, int64) {
			// Records 38..42 are unreadable: 41 and 42 are lost.
			return damage(t, dir, 38, func(b []byte, off int64) []byte { clear(b[off : offsetOf(1, 43)-1]); return b })
		}, replayed{SnapLSN: 40, Entries: []string{"state@40"}}},
		{"the chain breaks again after the snapshot", []uint64{20, 40}, func(t *testing.T, dir string) (string, int64) {
			return damage(t, dir, 5, func(b []byte, off int64) []byte {
				b[offsetOf(1, 50)+20] ^= 1
				return flipPayload(b, off)
			})
		}, replayed{SnapLSN: 40, Entries: []string{"state@40"}}},
		{"no snapshot", nil, func(t *testing.T, dir string) (string, int64) {
			return damage(t, dir, 5, flipPayload)
		}, replayed{Records: wantRecords(1, 4)}},
		{"every snapshot invalid", []uint64{20, 40}, func(t *testing.T, dir string) (string, int64) {
			for _, lsn := range []uint64{20, 40} {
				modifyFile(t, filepath.Join(dir, snapFile(lsn)), func(b []byte) []byte { b[len(b)-1] ^= 1; return b })
			}
			return damage(t, dir, 5, flipPayload)
		}, replayed{Records: wantRecords(1, 4)}},
		{"covered only by an invalid newest snapshot", []uint64{20, 40}, func(t *testing.T, dir string) (string, int64) {
			modifyFile(t, filepath.Join(dir, snapFile(40)), func(b []byte) []byte { b[len(b)-1] ^= 1; return b })
			return damage(t, dir, 30, flipPayload)
		}, after(20, 29)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			snappedLog(t, dir, n, 0, tt.snaps...)
			file, off := tt.setup(t, dir)
			size := fileSize(t, filepath.Join(dir, file))

			opts, logs := truncateOpts(dir)
			s := MustOpen(t, opts)
			assert.Equal(t, tt.want, replay(t, s))
			assert.Contains(t, logs.String(), "RecoverTruncate cuts the log here; every later record is LOST")
			assert.NotContains(t, logs.String(), "bridges")
			assert.GreaterOrEqual(t, s.Lost(), uint64((size-off)/recordSize(n)), "the dropped records are counted")
			for _, p := range s.Problems() {
				assert.Nil(t, p.Bridge)
			}
			require.NoError(t, s.Close())
		})
	}
}

// A damaged segment with later segments: the records resume in a new
// segment that the later ones continue; earlier segments go.
func TestOpen_BridgeOlderSegment(t *testing.T) {
	const n = 58
	tests := []struct {
		name string
		lsn  uint64 // 0: the first record of the oldest segment
		fn   func(b []byte, off int64) []byte
		skip uint64 // records skipped from lsn on
	}{
		{"oldest segment", 15, flipPayload, 1},
		{"a later segment", 27, flipPayload, 1},
		{"garbage before the first record: rewritten in place", 0, func(b []byte, off int64) []byte {
			return append(append(b[:off:off], "garbage, not a record"...), b[off:]...)
		}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			snappedLog(t, dir, n, 600, 20, 40)
			segs := segments(t, dir)
			require.Greater(t, len(segs), 3)
			require.LessOrEqual(t, segFirst(t, segs[0]), uint64(15), "the log after the previous snapshot is kept")
			lsn := tt.lsn
			if lsn == 0 {
				lsn = segFirst(t, segs[0])
			}
			file, off := damage(t, dir, lsn, tt.fn)
			require.NotEqual(t, segs[len(segs)-1], file, "not the newest segment")

			opts, logs := truncateOpts(dir)
			s := MustOpen(t, opts)
			assert.Equal(t, after(40, n), replay(t, s))
			assert.Zero(t, s.Lost())
			target := fmt.Sprintf("%020d.log", lsn+tt.skip)
			var want []string
			for _, seg := range segs {
				if seg > file {
					want = append(want, seg)
				}
			}
			assert.Equal(t, append([]string{target}, want...), segments(t, dir))
			require.Len(t, s.Problems(), 1)
			assert.Equal(t, off, s.Problems()[0].Offset)
			assert.Contains(t, logs.String(), "RecoverTruncate bridges it")
			s.Start(nil, nil)
			waitDurable(t, s, appendN(t, s, 30)) // past a rotation
			require.NoError(t, s.Close())

			plain, _ := testOptions(dir)
			plain.SegmentBytes = 600
			s = MustOpen(t, plain)
			assert.Empty(t, s.Problems())
			assert.Equal(t, after(40, n+30), replay(t, s))
			require.NoError(t, s.Close())
		})
	}

	t.Run("the next segment does not continue the records, but the snapshot holds the gap: dropped", func(t *testing.T) {
		dir := t.TempDir()
		snappedLog(t, dir, n, 600, 20, 40)
		segs := segments(t, dir)
		require.LessOrEqual(t, segFirst(t, segs[2]), uint64(41))
		damage(t, dir, segFirst(t, segs[0])+2, flipPayload)
		require.NoError(t, os.Remove(filepath.Join(dir, segs[1])))
		opts, logs := truncateOpts(dir)
		s := MustOpen(t, opts)
		assert.Contains(t, logs.String(), "RecoverTruncate drops the segments before it")
		assert.Equal(t, segs[2:], segments(t, dir))
		assert.Equal(t, after(40, n), replay(t, s))
		assert.Zero(t, s.Lost())
	})

	t.Run("the next whole segment starts past the snapshot: cut", func(t *testing.T) {
		dir := t.TempDir()
		snappedLog(t, dir, n, 600, 20, 40)
		segs := segments(t, dir)
		damage(t, dir, segFirst(t, segs[0])+2, flipPayload)
		i := 1
		for ; segFirst(t, segs[i]) <= 41; i++ {
			require.NoError(t, os.Remove(filepath.Join(dir, segs[i])))
		}
		opts, logs := truncateOpts(dir)
		s := MustOpen(t, opts)
		assert.Contains(t, logs.String(), "every later record is LOST")
		assert.Empty(t, segments(t, dir), "cut before the snapshot: the log is gone")
		assert.Equal(t, replayed{SnapLSN: 40, Entries: []string{"state@40"}}, replay(t, s))
		assert.Positive(t, s.Lost())
	})
}

// A torn tail after the resumed records of the newest segment is cut, as
// any torn tail is.
func TestOpen_BridgeThenTornTail(t *testing.T) {
	dir := t.TempDir()
	snappedLog(t, dir, 58, 0, 20, 40)
	damage(t, dir, 5, func(b []byte, off int64) []byte {
		return append(flipPayload(b, off), 0, 0, 0, 40, 1, 2, 3)
	})

	opts, logs := truncateOpts(dir)
	s := MustOpen(t, opts)
	assert.Equal(t, after(40, 58), replay(t, s))
	assert.Zero(t, s.Lost())
	require.Len(t, s.Problems(), 2)
	assert.NotNil(t, s.Problems()[0].Bridge)
	assert.Equal(t, snapshot.ProblemTorn, s.Problems()[1].Kind)
	assert.Contains(t, logs.String(), "cutting torn tail")
	assert.Equal(t, offsetOf(6, 59), fileSize(t, filepath.Join(dir, "00000000000000000006.log")))
	require.NoError(t, s.Close())
}

// ReadOnly (apollo11 inspect) modifies nothing and shows what a real Open
// would leave.
func TestOpen_BridgeReadOnly(t *testing.T) {
	for _, segBytes := range []int64{0, 600} {
		t.Run(fmt.Sprintf("segment bytes %d", segBytes), func(t *testing.T) {
			dir := t.TempDir()
			snappedLog(t, dir, 58, segBytes, 20, 40)
			damage(t, dir, 15, flipPayload)
			modifyFile(t, filepath.Join(dir, segments(t, dir)[len(segments(t, dir))-1]), func(b []byte) []byte { return append(b, 0, 0, 9) })
			before := files(t, dir)

			ro, _ := truncateOpts(dir)
			ro.ReadOnly = true
			s := MustOpen(t, ro)
			gotRO := replay(t, s)
			var logRO []rec
			require.NoError(t, s.ReadLog(func(lsn uint64, p []byte) error { logRO = append(logRO, rec{lsn, string(p)}); return nil }))
			problemsRO, lastRO, lostRO := s.Problems(), s.LastLSN(), s.Lost()
			require.NoError(t, s.Close())
			assert.Equal(t, before, files(t, dir), "read-only changes nothing")

			opts, _ := truncateOpts(dir)
			opts.SegmentBytes = segBytes
			s = MustOpen(t, opts)
			assert.Equal(t, replay(t, s), gotRO)
			var all []rec
			require.NoError(t, s.ReadLog(func(lsn uint64, p []byte) error { all = append(all, rec{lsn, string(p)}); return nil }))
			assert.Equal(t, all, logRO)
			assert.Equal(t, wantRecords(16, 58), logRO)
			assert.Equal(t, s.Problems(), problemsRO)
			assert.Equal(t, s.LastLSN(), lastRO)
			assert.Equal(t, s.Lost(), lostRO)
			require.NoError(t, s.Close())
		})
	}
}

// Random damage anywhere in a segment: RecoverTruncate always opens, and
// replays the records after the snapshot with their own payloads, in
// order, up to where the damage starts; when all the damage is in records
// the snapshot holds, it replays every one of them and loses nothing.
func TestOpen_BridgeRandomDamage(t *testing.T) {
	const n = 58
	template := t.TempDir()
	snappedLog(t, template, n, 0, 20, 40)
	seg := segments(t, template)[0]
	covered := offsetOf(1, 41) // the bytes of records 1..40
	rng := rand.New(rand.NewPCG(5, 8))
	bridged := 0
	const rounds = 150
	for round := 0; round < rounds; round++ {
		dir := t.TempDir()
		require.NoError(t, os.CopyFS(dir, os.DirFS(template)))
		inCovered := rng.IntN(3) > 0
		var desc []string
		modifyFile(t, filepath.Join(dir, seg), func(b []byte) []byte {
			limit := int64(len(b))
			if inCovered {
				limit = covered
			}
			for range 1 + rng.IntN(3) {
				off := rng.Int64N(limit)
				size := min(1+rng.Int64N(40), limit-off)
				zero := rng.IntN(2) == 0
				for i := off; i < off+size; i++ {
					if zero {
						b[i] = 0
					} else {
						b[i] = byte(rng.Uint32())
					}
				}
				desc = append(desc, fmt.Sprintf("%d+%d zero=%v", off, size, zero))
			}
			return b
		})
		opts, _ := truncateOpts(dir)
		s, err := snapshot.Open(opts)
		require.NoError(t, err, "round %d: %v", round, desc)
		got := replay(t, s)
		assert.Equal(t, uint64(40), got.SnapLSN, "round %d: %v", round, desc)
		assert.Equal(t, wantRecords(41, 40+uint64(len(got.Records))), got.Records, "round %d: %v", round, desc)
		problems := s.Problems()
		if inCovered && len(problems) > 0 && problems[0].Kind != snapshot.ProblemTorn {
			// (A flipped length that makes a record end exactly at the end
			// of the file passes for a torn last record: spec section 7.)
			assert.Equal(t, after(40, n), got, "round %d: %v", round, desc)
			assert.Zero(t, s.Lost(), "round %d: %v", round, desc)
			assert.NotNil(t, problems[0].Bridge, "round %d: %v", round, desc)
		}
		if len(problems) > 0 && problems[0].Bridge != nil {
			bridged++
		}
		require.NoError(t, s.Close())
	}
	t.Logf("%d of %d rounds bridged", bridged, rounds)
	assert.Greater(t, bridged, 50)
}
