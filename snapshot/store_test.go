package snapshot_test

import (
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/snapshot"
)

func TestParseFsyncMode(t *testing.T) {
	tests := []struct {
		in   string
		want snapshot.FsyncMode
		ok   bool
	}{
		{"always", snapshot.FsyncAlways, true},
		{"batch", snapshot.FsyncBatch, true},
		{"never", snapshot.FsyncNever, true},
		{"", 0, false},
		{"Always", 0, false},
		{"sometimes", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := snapshot.ParseFsyncMode(tt.in)
			if !tt.ok {
				assert.ErrorIs(t, err, snapshot.ErrBadFsyncMode)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
			assert.Equal(t, tt.in, got.String())
		})
	}
}

func TestStore_AppendReplay(t *testing.T) {
	for _, mode := range []snapshot.FsyncMode{snapshot.FsyncAlways, snapshot.FsyncBatch, snapshot.FsyncNever} {
		t.Run(mode.String(), func(t *testing.T) {
			dir := t.TempDir()
			opts, _ := testOptions(dir)
			opts.Fsync = mode
			opts.FsyncInterval = 2 * time.Millisecond
			opts.SegmentBytes = 1024 // a few dozen records per segment
			var last uint64
			for round := 0; round < 3; round++ {
				s, r := MustStart(t, opts)
				assert.Equal(t, wantRecords(1, last), r.Records, "round %d", round)
				assert.Equal(t, last, s.LastLSN())
				last = appendN(t, s, 50)
				waitDurable(t, s, last)
				require.NoError(t, s.Close())
			}
			assert.Greater(t, len(segments(t, dir)), 3, "records rotate over several segments")
			r := reopen(t, opts)
			assert.Equal(t, wantRecords(1, 150), r.Records)
			assert.Zero(t, r.SnapLSN)
			for _, seg := range segments(t, dir) {
				assert.LessOrEqual(t, fileSize(t, dir+"/"+seg), int64(1024), seg)
			}
		})
	}
}

func TestStore_Append(t *testing.T) {
	t.Run("oversized record gets a segment of its own", func(t *testing.T) {
		dir := t.TempDir()
		opts, _ := testOptions(dir)
		opts.SegmentBytes = 100
		s, _ := MustStart(t, opts)
		big := make([]byte, 300)
		s.Append([]byte("a"))
		lsn := s.Append(big)
		s.Append([]byte("b"))
		waitDurable(t, s, lsn+1)
		require.NoError(t, s.Close())
		assert.Len(t, segments(t, dir), 3)
		r := reopen(t, opts)
		require.Len(t, r.Records, 3)
		assert.Equal(t, string(big), r.Records[1].Payload)
	})
	t.Run("payload is copied", func(t *testing.T) {
		opts, _ := testOptions(t.TempDir())
		s := MustOpen(t, opts)
		p := []byte("before")
		s.Append(p)
		copy(p, "after!")
		require.NoError(t, s.Close())
		assert.Equal(t, []rec{{1, "before"}}, reopen(t, opts).Records)
	})
	t.Run("after Close", func(t *testing.T) {
		opts, _ := testOptions(t.TempDir())
		s := MustOpen(t, opts)
		require.NoError(t, s.Close())
		assert.Zero(t, s.Append([]byte("x")))
		assert.ErrorIs(t, s.Close(), snapshot.ErrClosed)
	})
}

func TestStore_GroupCommit(t *testing.T) {
	opts, _ := testOptions(t.TempDir())
	s := MustOpen(t, opts)
	replay(t, s)
	var prev, calls atomic.Uint64
	var outOfOrder atomic.Bool
	s.Start(func(lsn uint64) {
		if lsn <= prev.Load() {
			outOfOrder.Store(true)
		}
		prev.Store(lsn)
		calls.Add(1)
	}, nil)

	const writers, each = 64, 20
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				waitDurable(t, s, s.Append([]byte("k=v")))
			}
		}()
	}
	wg.Wait()
	// WaitDurable returns once the LSN is published, which is just before
	// the writer goroutine calls onDurable with it.
	assert.Eventually(t, func() bool { return prev.Load() == writers*each }, 10*time.Second, time.Millisecond,
		"onDurable reports the last LSN (last seen %d)", prev.Load())
	st := s.Stats()
	t.Logf("%d records, %d fsyncs, %d onDurable calls", st.Records, st.Fsyncs, calls.Load())
	assert.EqualValues(t, writers*each, st.Records)
	assert.EqualValues(t, writers*each, st.DurableLSN)
	assert.False(t, outOfOrder.Load(), "onDurable LSNs increase")
	assert.Less(t, st.Fsyncs, st.Records, "concurrent records share fsyncs")
	var hist uint64
	for _, n := range st.FsyncHist {
		hist += n
	}
	assert.Equal(t, st.Fsyncs, hist)
	assert.GreaterOrEqual(t, st.FsyncTotal, st.FsyncMax)
}

func TestStore_FsyncBatch(t *testing.T) {
	const interval = 50 * time.Millisecond
	opts, _ := testOptions(t.TempDir())
	opts.Fsync = snapshot.FsyncBatch
	opts.FsyncInterval = interval
	s, _ := MustStart(t, opts)

	start := time.Now()
	var last uint64
	for time.Since(start) < 500*time.Millisecond {
		last = s.Append([]byte("k=v"))
		assert.LessOrEqual(t, s.DurableLSN(), last)
		time.Sleep(time.Millisecond)
	}
	waitDurable(t, s, last)
	elapsed := time.Since(start)
	st := s.Stats()
	t.Logf("%d records, %d fsyncs in %v", st.Records, st.Fsyncs, elapsed)
	assert.LessOrEqual(t, st.Fsyncs, uint64(elapsed/interval)+1, "at most one fsync per interval")
	assert.GreaterOrEqual(t, st.Fsyncs, uint64(3))

	// An isolated record is confirmed after the next fsync, within about
	// one interval.
	time.Sleep(2 * interval)
	t0 := time.Now()
	lsn := s.Append([]byte("k=v"))
	waitDurable(t, s, lsn)
	assert.Less(t, time.Since(t0), 5*interval, "not held back beyond the interval")
	assert.Equal(t, st.Fsyncs+1, s.Stats().Fsyncs)
}

func TestStore_FsyncNever(t *testing.T) {
	opts, logs := testOptions(t.TempDir())
	opts.Fsync = snapshot.FsyncNever
	s, _ := MustStart(t, opts)
	last := appendN(t, s, 100)
	waitDurable(t, s, last)
	assert.Zero(t, s.Stats().Fsyncs, "confirmed without fsync")
	require.NoError(t, s.Close())
	assert.EqualValues(t, 1, s.Stats().Fsyncs, "Close fsyncs")
	assert.Contains(t, logs.String(), "fsync=never: confirmed changes can be lost on power loss")
	assert.Equal(t, wantRecords(1, 100), reopen(t, opts).Records)
}

func TestStore_Close(t *testing.T) {
	for _, mode := range []snapshot.FsyncMode{snapshot.FsyncAlways, snapshot.FsyncBatch, snapshot.FsyncNever} {
		for _, started := range []bool{true, false} {
			name := mode.String() + "/not started"
			if started {
				name = mode.String() + "/started"
			}
			t.Run(name, func(t *testing.T) {
				opts, _ := testOptions(t.TempDir())
				opts.Fsync = mode
				opts.FsyncInterval = time.Hour // only Close can flush a batch
				s := MustOpen(t, opts)
				replay(t, s)
				if started {
					s.Start(nil, nil)
				}
				last := appendN(t, s, 1000)
				require.NoError(t, s.Close())
				assert.Equal(t, last, s.DurableLSN())
				assert.Equal(t, wantRecords(1, 1000), reopen(t, opts).Records)
			})
		}
	}
}

func TestStore_Replay(t *testing.T) {
	t.Run("twice", func(t *testing.T) {
		opts, _ := testOptions(t.TempDir())
		s := MustOpen(t, opts)
		replay(t, s)
		_, err := s.Replay(nil, nil)
		assert.ErrorIs(t, err, snapshot.ErrReplayOrder)
	})
	t.Run("callback error stops it", func(t *testing.T) {
		opts, _ := testOptions(t.TempDir())
		s, _ := MustStart(t, opts)
		appendN(t, s, 3)
		require.NoError(t, s.Close())
		s = MustOpen(t, opts)
		var seen int
		_, err := s.Replay(nil, func(lsn uint64, p []byte) error {
			seen++
			if lsn == 2 {
				return assert.AnError
			}
			return nil
		})
		assert.ErrorIs(t, err, assert.AnError)
		assert.Equal(t, 2, seen)
	})
}

func TestOpen_LocksDataDir(t *testing.T) {
	dir := t.TempDir()
	opts, _ := testOptions(dir)
	s, err := snapshot.Open(opts)
	require.NoError(t, err)
	_, err = snapshot.Open(opts)
	require.ErrorIs(t, err, snapshot.ErrLocked)
	ro := opts
	ro.ReadOnly = true
	r, err := snapshot.Open(ro)
	require.NoError(t, err, "a read-only open takes no lock")
	require.NoError(t, r.Close())
	require.NoError(t, s.Close())
	s, err = snapshot.Open(opts)
	require.NoError(t, err, "Close releases the lock")
	require.NoError(t, s.Close())
}

// A lock file that survives a kill -9 looks stale and gets deleted; the
// dir must stay held anyway, or two main controls share one log.
func TestOpen_LockSurvivesDeletedLockFile(t *testing.T) {
	dir := t.TempDir()
	opts, _ := testOptions(dir)
	s, err := snapshot.Open(opts)
	require.NoError(t, err)
	require.NoError(t, os.Remove(filepath.Join(dir, "lock")))
	_, err = snapshot.Open(opts)
	require.ErrorIs(t, err, snapshot.ErrLocked)
	require.NoError(t, s.Close())
	s, err = snapshot.Open(opts)
	require.NoError(t, err, "Close releases the lock")
	require.NoError(t, s.Close())
}
