package snapshot

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// fsyncBounds are the inclusive upper bounds of the fsync latency
// histogram buckets.
var fsyncBounds = [...]time.Duration{
	100 * time.Microsecond, 250 * time.Microsecond, 500 * time.Microsecond,
	time.Millisecond, 2500 * time.Microsecond, 5 * time.Millisecond,
	10 * time.Millisecond, 25 * time.Millisecond, 50 * time.Millisecond,
	100 * time.Millisecond, 250 * time.Millisecond, time.Second,
}

// FsyncBuckets is the number of buckets of Stats.FsyncHist.
const FsyncBuckets = len(fsyncBounds) + 1

// FsyncBucketBounds returns the inclusive upper bounds of the buckets of Stats.FsyncHist.
// The last bucket has no bound and counts the rest.
func FsyncBucketBounds() []time.Duration { return slices.Clone(fsyncBounds[:]) }

// Stats are counters for metrics and `apollo11 inspect`.
// Counters run from Open.
type Stats struct {
	LastLSN      uint64 // last appended
	DurableLSN   uint64 // last durable
	Records      uint64 // records appended
	Bytes        uint64 // payload bytes appended
	WrittenBytes uint64 // log bytes written, headers included (rewrites after failures count again)

	Fsyncs     uint64               // successful fsyncs of log segments
	FsyncTotal time.Duration        // their total latency
	FsyncMax   time.Duration        // their largest latency
	FsyncHist  [FsyncBuckets]uint64 // latency histogram, see FsyncBucketBounds
	WriteErrs  uint64               // failed writes or fsyncs
	Healthy    bool                 // false from a failed write or fsync until one succeeds
	LastError  error                // the last write or fsync error, nil if none

	Snapshots        uint64        // snapshots written
	SnapshotLSN      uint64        // LSN of the newest snapshot (loaded or written)
	SnapshotBytes    int64         // its size
	SnapshotDuration time.Duration // time the last WriteSnapshot took
	// SnapshotWritten counts the bytes of every snapshot file written, manifests and parts.
	// It is the disk cost of snapshots.
	SnapshotWritten uint64

	Segments int   // log segments
	LogBytes int64 // bytes in them
}

// statsState holds the counters. Append touches only the atomics.
type statsState struct {
	records atomic.Uint64
	bytes   atomic.Uint64

	mu           sync.Mutex
	written      uint64
	fsyncs       uint64
	fsyncTotal   time.Duration
	fsyncMax     time.Duration
	hist         [FsyncBuckets]uint64
	writeErrs    uint64
	lastErr      error
	snapshots    uint64
	snapLSN      uint64
	snapBytes    int64
	snapDuration time.Duration
	snapWritten  uint64
}

func (st *statsState) appended(n int) {
	st.records.Add(1)
	st.bytes.Add(uint64(n))
}

func (st *statsState) wrote(n int) {
	st.mu.Lock()
	st.written += uint64(n)
	st.mu.Unlock()
}

func (st *statsState) synced(d time.Duration) {
	i, _ := slices.BinarySearch(fsyncBounds[:], d)
	st.mu.Lock()
	st.fsyncs++
	st.fsyncTotal += d
	st.fsyncMax = max(st.fsyncMax, d)
	st.hist[i]++
	st.mu.Unlock()
}

func (st *statsState) failed(err error) {
	st.mu.Lock()
	st.writeErrs++
	st.lastErr = err
	st.mu.Unlock()
}

func (st *statsState) snapshot(lsn uint64, size int64, d time.Duration) {
	st.mu.Lock()
	st.snapshots++
	st.snapLSN, st.snapBytes, st.snapDuration = lsn, size, d
	st.mu.Unlock()
}

func (st *statsState) snapshotWrote(n int64) {
	st.mu.Lock()
	st.snapWritten += uint64(max(n, 0))
	st.mu.Unlock()
}

// Stats returns a copy of the counters.
func (s *Store) Stats() Stats {
	st := &s.stats
	out := Stats{
		LastLSN:    s.LastLSN(),
		DurableLSN: s.DurableLSN(),
		Records:    st.records.Load(),
		Bytes:      st.bytes.Load(),
		Healthy:    s.healthy.Load(),
	}
	st.mu.Lock()
	out.WrittenBytes = st.written
	out.Fsyncs, out.FsyncTotal, out.FsyncMax, out.FsyncHist = st.fsyncs, st.fsyncTotal, st.fsyncMax, st.hist
	out.WriteErrs, out.LastError = st.writeErrs, st.lastErr
	out.Snapshots, out.SnapshotLSN, out.SnapshotBytes, out.SnapshotDuration = st.snapshots, st.snapLSN, st.snapBytes, st.snapDuration
	out.SnapshotWritten = st.snapWritten
	st.mu.Unlock()
	s.filesMu.Lock()
	out.Segments = len(s.segs)
	for _, seg := range s.segs {
		out.LogBytes += seg.size
	}
	s.filesMu.Unlock()
	return out
}
