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

// A corrupt newest snapshot whose records the log cannot bring back: the
// records it covered were confirmed, so Open refuses, naming them, and
// only RecoverTruncate starts, counting them as lost (spec section 7).
// Snapshots are at LSN 100 (valid) and 250 (made invalid).
func TestOpen_InvalidSnapshotLogCannotCover(t *testing.T) {
	tests := []struct {
		name string
		// damage changes the log and returns the last LSN RecoverTruncate
		// keeps; saved is the one segment as it was at LSN 90 (segBytes
		// 0) or nil.
		segBytes int64
		damage   func(t *testing.T, dir string, saved []byte) uint64
		missing  string // the records the refusal names
	}{
		{"log ends before the previous snapshot", 0, func(t *testing.T, dir string, saved []byte) uint64 {
			// The reproduction: the old code deleted the log, loaded
			// snapshot 100 and handed out the ids of 101..250 again.
			segs := segments(t, dir)
			require.Len(t, segs, 1)
			require.NoError(t, os.WriteFile(filepath.Join(dir, segs[0]), saved, 0o644))
			return 100
		}, "records 101..250"},
		{"log starts after the previous snapshot", 300, func(t *testing.T, dir string, _ []byte) uint64 {
			segs := segments(t, dir)
			require.LessOrEqual(t, segFirst(t, segs[0]), uint64(101))
			require.Greater(t, segFirst(t, segs[1]), uint64(101))
			require.NoError(t, os.Remove(filepath.Join(dir, segs[0])))
			return 100
		}, "records 101.."},
		{"log ends before the invalid snapshot's last record", 300, func(t *testing.T, dir string, _ []byte) uint64 {
			segs := segments(t, dir)
			last := segs[len(segs)-1]
			require.NoError(t, os.Remove(filepath.Join(dir, last)))
			keep := segFirst(t, last) - 1
			require.Greater(t, keep, uint64(100))
			return keep
		}, "..250"},
		{"no log", 0, func(t *testing.T, dir string, _ []byte) uint64 {
			require.NoError(t, os.Remove(filepath.Join(dir, segments(t, dir)[0])))
			return 100
		}, "records 101..250"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			opts, _ := testOptions(dir)
			opts.SegmentBytes = tt.segBytes
			s, _ := MustStart(t, opts)
			waitDurable(t, s, appendN(t, s, 90))
			var saved []byte
			if tt.segBytes == 0 {
				var err error
				saved, err = os.ReadFile(filepath.Join(dir, segments(t, dir)[0]))
				require.NoError(t, err)
			}
			appendN(t, s, 10)
			require.NoError(t, s.WriteSnapshot(100, fill("state@100")))
			appendN(t, s, 150)
			require.NoError(t, s.WriteSnapshot(250, fill("state@250")))
			require.NoError(t, s.Close())
			require.Equal(t, []string{snapFile(100), snapFile(250)}, snapshots(t, dir))
			modifyFile(t, filepath.Join(dir, snapFile(250)), func(b []byte) []byte { b[len(b)-1] ^= 1; return b })
			keep := tt.damage(t, dir, saved)
			before := files(t, dir)

			// A plain Open refuses, names the records, and changes nothing.
			s = MustOpen(t, opts)
			_, err := s.Replay(nil, nil)
			require.ErrorIs(t, err, snapshot.ErrMissingLog, "falling back to snapshot 100 would lose confirmed records")
			assert.Contains(t, err.Error(), tt.missing)
			assert.Contains(t, err.Error(), snapFile(250))
			require.NoError(t, s.Close())
			assert.Equal(t, before, files(t, dir))

			// Inspect says so, and what RecoverTruncate would do.
			info, err := snapshot.Inspect(opts)
			require.NoError(t, err)
			assert.Contains(t, info.OpenError, tt.missing)
			require.NotNil(t, info.RecoverTruncate)
			assert.Equal(t, &snapshot.RecoverInfo{LoadSnapshot: snapFile(100), LastLSN: keep, Lost: 250 - keep},
				info.RecoverTruncate)
			assert.Equal(t, before, files(t, dir))

			// RecoverTruncate starts from snapshot 100 and what the log
			// can still replay, counting the rest as lost.
			rt := opts
			rt.RecoverTruncate = true
			s = MustOpen(t, rt)
			r := replay(t, s)
			assert.Equal(t, uint64(100), r.SnapLSN)
			assert.Equal(t, []string{"state@100"}, r.Entries)
			assert.Equal(t, wantRecords(101, keep), r.Records)
			assert.Equal(t, 250-keep, s.Lost())
			s.Start(nil, nil)
			waitDurable(t, s, appendN(t, s, 3))
			assert.Equal(t, keep+3, s.LastLSN())
			require.NoError(t, s.Close())

			// The next plain Open starts: the loss is not refused again,
			// and is still reported until the caller has made up for it.
			s = MustOpen(t, opts)
			r = replay(t, s)
			assert.Equal(t, uint64(100), r.SnapLSN)
			assert.Equal(t, keep+3, s.LastLSN())
			assert.Equal(t, 250-keep, s.Lost())
			require.NoError(t, s.ClearLost())
			require.NoError(t, s.Close())
			assert.NotContains(t, snapshots(t, dir), snapFile(250), "the invalid snapshot is gone with its records")
		})
	}
}

// A valid newest snapshot still covers a log that ends before it (after
// a power loss with FsyncNever): the log is removed and nothing is lost.
func TestOpen_LogEndsBeforeValidSnapshot(t *testing.T) {
	dir := t.TempDir()
	opts, logs := testOptions(dir)
	s, _ := MustStart(t, opts)
	waitDurable(t, s, appendN(t, s, 5))
	saved, err := os.ReadFile(filepath.Join(dir, segments(t, dir)[0]))
	require.NoError(t, err)
	appendN(t, s, 5)
	require.NoError(t, s.WriteSnapshot(10, fill("state@10")))
	require.NoError(t, s.Close())
	require.NoError(t, os.WriteFile(filepath.Join(dir, segments(t, dir)[0]), saved, 0o644))

	s = MustOpen(t, opts)
	r := replay(t, s)
	assert.Equal(t, uint64(10), r.SnapLSN)
	assert.Empty(t, r.Records)
	assert.Zero(t, s.Lost())
	assert.Contains(t, logs.String(), "the log ends before the snapshot")
	s.Start(nil, nil)
	waitDurable(t, s, appendN(t, s, 1))
	assert.Equal(t, uint64(11), s.LastLSN())
	require.NoError(t, s.Close())
	assert.Equal(t, []string{fmt.Sprintf("%020d.log", 11)}, segments(t, dir))
}
