package snapshot_test

import (
	"github.com/apollo11/apollo11/snapshot/snapshottest"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/snapshot"
)

// healthLog records onHealth calls.
type healthLog chan error

func (h healthLog) next(t *testing.T) error {
	t.Helper()
	select {
	case err := <-h:
		return err
	case <-time.After(5 * time.Second):
		t.Fatal("no onHealth call within 5s")
		return nil
	}
}

func TestStore_DiskFailure(t *testing.T) {
	const healthy = 5 // records written before the fault
	tests := []struct {
		name   string
		inject func(f *snapshottest.FaultFS)
		want   error
		// maxDurable is the highest LSN that may be confirmed while the
		// fault lasts.
		maxDurable uint64
		segBytes   int64
	}{
		{"ENOSPC on write", func(f *snapshottest.FaultFS) {
			f.FailWritesAfter(3*recordSize(6)+7, syscall.ENOSPC) // 3 more records and a bit fit
		}, syscall.ENOSPC, healthy + 3, 0},
		{"EIO on fsync", func(f *snapshottest.FaultFS) { f.FailSyncs(syscall.EIO) }, syscall.EIO, healthy, 0},
		{"ENOSPC across rotations", func(f *snapshottest.FaultFS) {
			f.FailWritesAfter(recordSize(6)+3, syscall.ENOSPC)
		}, syscall.ENOSPC, healthy + 1, 200},
	}
	for _, tt := range tests {
		for _, mode := range []snapshot.FsyncMode{snapshot.FsyncAlways, snapshot.FsyncBatch} {
			t.Run(tt.name+"/"+mode.String(), func(t *testing.T) {
				t.Parallel()
				ffs := snapshottest.NewFaultFS(snapshottest.LogSegments)
				opts, logs := testOptions(t.TempDir())
				opts.FS = ffs
				opts.Fsync = mode
				opts.FsyncInterval = 5 * time.Millisecond
				opts.SegmentBytes = tt.segBytes
				health := make(healthLog, 10)
				var durable []uint64 // written only by the writer goroutine
				s := MustOpen(t, opts)
				replay(t, s)
				s.Start(func(lsn uint64) { durable = append(durable, lsn) }, func(err error) { health <- err })
				waitDurable(t, s, appendN(t, s, healthy))

				tt.inject(ffs)
				for i := 0; i < 20; i++ {
					appendN(t, s, 1)
					time.Sleep(time.Millisecond)
				}
				err := health.next(t)
				require.ErrorIs(t, err, tt.want)
				assert.Contains(t, logs.String(), "log write failed")
				time.Sleep(1500 * time.Millisecond) // at least one timed retry
				assert.False(t, s.Stats().Healthy)
				assert.LessOrEqual(t, s.DurableLSN(), tt.maxDurable, "nothing unwritten is confirmed")
				assert.Greater(t, ffs.Fails(), 1, "the writer retries")
				last := appendN(t, s, 5) // Append keeps accepting while unhealthy

				ffs.Heal()
				require.NoError(t, health.next(t), "onHealth(nil) once writes succeed")
				waitDurable(t, s, last)
				assert.True(t, s.Stats().Healthy)
				require.NoError(t, s.Close())
				for i := 1; i < len(durable); i++ {
					assert.Greater(t, durable[i], durable[i-1])
				}
				assert.Equal(t, last, durable[len(durable)-1])

				opts.FS = nil
				assert.Equal(t, wantRecords(1, last), reopen(t, opts).Records,
					"every record on disk exactly once, in order")
			})
		}
	}
}

func TestStore_CloseWhileFailing(t *testing.T) {
	ffs := snapshottest.NewFaultFS(snapshottest.LogSegments)
	opts, _ := testOptions(t.TempDir())
	opts.FS = ffs
	s, _ := MustStart(t, opts)
	waitDurable(t, s, appendN(t, s, 3))
	ffs.FailSyncs(syscall.EIO)
	appendN(t, s, 4)
	err := s.Close()
	require.ErrorIs(t, err, syscall.EIO)
	assert.Contains(t, err.Error(), "records 4..7 not written")
	assert.EqualValues(t, 3, s.DurableLSN())
}

// A write or fsync that hangs, rather than fails, reports the store
// unhealthy once it has waited StallTimeout, and healthy again with the
// next durable write; nothing is confirmed before the disk answers.
func TestStore_StalledDisk(t *testing.T) {
	ffs := snapshottest.NewFaultFS(snapshottest.LogSegments)
	opts, logs := testOptions(t.TempDir())
	opts.FS = ffs
	opts.StallTimeout = 100 * time.Millisecond
	health := make(healthLog, 10)
	s := MustOpen(t, opts)
	replay(t, s)
	s.Start(nil, func(err error) { health <- err })
	waitDurable(t, s, appendN(t, s, 3))

	ffs.HoldSyncs()
	last := appendN(t, s, 2)
	err := health.next(t)
	require.ErrorIs(t, err, snapshot.ErrStalled)
	assert.Contains(t, logs.String(), "log fsync stalled")
	assert.False(t, s.Stats().Healthy)
	assert.Less(t, s.DurableLSN(), last, "nothing confirmed while the fsync hangs")

	ffs.ReleaseSyncs()
	require.NoError(t, health.next(t), "healthy again once the fsync returns")
	waitDurable(t, s, last)
	assert.True(t, s.Stats().Healthy)
	select {
	case err := <-health:
		t.Fatalf("one report each way, then %v", err)
	case <-time.After(200 * time.Millisecond):
	}
}
