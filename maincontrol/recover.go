package maincontrol

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"runtime"
	"runtime/debug"
	"sync"

	"github.com/apollo11/apollo11/cluster"
	"github.com/apollo11/apollo11/maincontrol/core"
	"github.com/apollo11/apollo11/snapshot"
)

// RestoreOptions says what Restore does besides replaying.
type RestoreOptions struct {
	// Entry, when set, sees each snapshot entry before the core loads it.
	Entry func(payload []byte)
	// Serve readies the state for serving. st must be writable and not
	// started. See Restore.
	Serve bool
	// Logger takes a warning Restore can recover from.
	Logger *slog.Logger
}

// Restored is what Restore found.
type Restored struct {
	// Loaded is the state as the snapshot left it, before the log's
	// records, at SnapshotLSN. The next snapshot writes its changes
	// against it.
	Loaded      *core.Snapshot
	SnapshotLSN uint64
}

// Restore is the one recovery sequence, for the main control and for
// `apollo11 inspect` alike. It replays st into c, a core just made. The
// snapshot comes first, then the log. Core.Recovered then settles what
// the restart left open. The ids of records a --recover-truncate cut
// dropped are skipped, as they may have been handed out. A nil st is a
// memory-only main control, with nothing to replay.
//
// With o.Serve, before Recovered, every stored task must fit the frames
// (Core.CheckFrames). After it, a restart epoch begins. The epoch and
// every record recovery made are fsynced, whatever --fsync says. Task
// frames do not wait for their dispatch records. So a version of a lost
// dispatch must never be handed out again (spec section 7).
func Restore(st *snapshot.Store, c *core.Core, o RestoreOptions) (Restored, error) {
	if st == nil {
		c.Recovered()
		return Restored{}, nil
	}
	var res Restored
	snapLSN, err := replay(st, c, o.Entry, &res)
	if err != nil {
		return Restored{}, err
	}
	if res.Loaded == nil {
		res.Loaded = c.Freeze()
	}
	res.SnapshotLSN = snapLSN
	if o.Serve {
		if err := c.CheckFrames(); err != nil { // before Recovered logs anything
			return Restored{}, err
		}
	}
	c.Recovered()
	lost := st.Lost()
	if !o.Serve {
		if lost > 0 {
			c.SkipIDs(lost)
		}
		return res, nil
	}
	if err := c.BeginEpoch(lost); err != nil {
		return Restored{}, err
	}
	if lost > 0 {
		c.SkipIDs(lost)
	}
	if err := st.Sync(); err != nil {
		return Restored{}, fmt.Errorf("cannot make epoch %d durable: %w", c.Epoch(), err)
	}
	c.Durable(st.DurableLSN())
	if lost > 0 {
		if err := st.ClearLost(); err != nil && o.Logger != nil {
			// Harmless: the next start skips again.
			o.Logger.Warn("cannot clear the count of lost records", "err", err)
		}
	}
	return res, nil
}

// A restart reads on one goroutine, decodes on others and loads on the
// core's, in order. Decoding is pure and half of a restart's work, and a
// host has two cores or more. A batch ends at batchLen entries or
// batchBytes of payload. Reading runs ahead of loading by batchesAhead
// batches and aheadBytes of payload at most. Counting entries alone, large
// args would make the batches hold a copy of most of the state.
const (
	batchLen     = 512
	batchBytes   = 1 << 20
	batchesAhead = 8
	aheadBytes   = 16 << 20
)

// heapPerByte is about the heap a restart builds per byte it reads. A
// pending task of 100-byte args is 177 bytes in a part and 330 in memory.
const heapPerByte = 2

// loadBatch is a batch of entries or records, never both. log says it
// holds records. done is closed once it is decoded.
type loadBatch struct {
	b    core.LoadBatch
	log  bool
	done chan struct{}
}

// inFlight counts the payload bytes read but not yet loaded.
type inFlight struct {
	mu      sync.Mutex
	more    sync.Cond // signalled as bytes are loaded or the load stops
	n       int
	stopped bool
}

// take waits until n more bytes fit or none are in flight. A batch
// larger than aheadBytes thus still goes. It is false once stopped.
func (f *inFlight) take(n int) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for f.n > 0 && f.n+n > aheadBytes && !f.stopped {
		f.more.Wait()
	}
	f.n += n
	return !f.stopped
}

func (f *inFlight) give(n int) {
	f.mu.Lock()
	f.n -= n
	f.mu.Unlock()
	f.more.Signal()
}

func (f *inFlight) stop() {
	f.mu.Lock()
	f.stopped = true
	f.mu.Unlock()
	f.more.Broadcast()
}

// errLoadStopped stops the reading once the core has refused a batch.
var errLoadStopped = errors.New("recovery stopped")

// replay replays st into c and returns the snapshot's LSN. entry, when
// set, sees each snapshot entry on the reading goroutine. res.Loaded is
// the state when the first log record comes, before it is applied.
func replay(st *snapshot.Store, c *core.Core, entry func(p []byte), res *Restored) (uint64, error) {
	defer holdGC()()
	hugeHeap(heapPerByte * st.ReplaySize())
	order := make(chan *loadBatch, batchesAhead) // to the core, in order
	work := make(chan *loadBatch, batchesAhead)  // to the decoders
	free := make(chan *loadBatch, batchesAhead+2)
	stop := make(chan struct{})
	var held inFlight
	held.more.L = &held.mu
	var wg sync.WaitGroup
	for range max(runtime.GOMAXPROCS(0), 1) {
		wg.Go(func() {
			var d core.LoadDecoder
			for lb := range work {
				lb.b.Decode(&d)
				close(lb.done)
			}
		})
	}
	var snapLSN uint64
	var readErr error
	go func() {
		defer close(order)
		defer close(work)
		cur := &loadBatch{done: make(chan struct{})}
		send := func(log bool) error {
			if cur.b.Len() > 0 {
				next := &loadBatch{}
				select {
				case next = <-free:
				default:
				}
				next.done = make(chan struct{})
				next.b.Follow(&cur.b)
				if !held.take(cur.b.Bytes()) {
					return errLoadStopped
				}
				for _, ch := range []chan *loadBatch{work, order} {
					select {
					case ch <- cur:
					case <-stop:
						return errLoadStopped
					}
				}
				cur = next
			}
			cur.log = log
			return nil
		}
		added := func() error {
			if cur.b.Len() >= batchLen || cur.b.Bytes() >= batchBytes {
				return send(cur.log)
			}
			return nil
		}
		see := func(p []byte) {
			if entry != nil {
				entry(p)
			}
		}
		snapLSN, readErr = st.ReplayWith(snapshot.Loader{
			Entry: func(p []byte) error { see(p); cur.b.Entry(p); return added() },
			Put:   func(id uint64, p []byte) error { see(p); cur.b.Put(id, p); return added() },
			Drop:  func(id uint64) error { cur.b.Drop(id); return added() },
		}, func(lsn uint64, p []byte) error {
			if !cur.log {
				if err := send(true); err != nil {
					return err
				}
			}
			cur.b.Record(lsn, p)
			return added()
		})
		if readErr == nil {
			readErr = send(false)
		}
	}()
	var loadErr error
	for lb := range order {
		if loadErr != nil {
			continue // drain, so that the reader stops
		}
		<-lb.done
		if lb.log && res.Loaded == nil {
			res.Loaded = c.Freeze()
		}
		if loadErr = c.LoadBatch(&lb.b); loadErr != nil {
			close(stop)
			held.stop()
			continue
		}
		held.give(lb.b.Bytes())
		if lb.b.Cap() > 2*batchBytes {
			continue // grown by a large entry: let it go rather than keep it
		}
		lb.b.Reset()
		select {
		case free <- lb:
		default:
		}
	}
	wg.Wait()
	if loadErr != nil {
		return 0, loadErr
	}
	return snapLSN, readErr
}

// gcHold counts the restores under way (tests run several at once), so
// that the last one restores the GOGC the first one found.
var gcHold struct {
	sync.Mutex
	n, old int
}

// restoreGOGC is the GOGC of a restart without a memory limit. The
// collector still bounds the garbage, at a small share of the CPU.
const restoreGOGC = 800

// holdGC turns the collector off until the returned func is called. A
// restart builds the whole state and makes little garbage. Collections
// as the heap doubled would take a third of its CPU, for nothing.
// GOMEMLIMIT, when set, still starts a collection. Without one, the
// garbage of overwritten entries and replayed records must still go.
// The collector then runs at restoreGOGC instead.
func holdGC() (release func()) {
	gcHold.Lock()
	defer gcHold.Unlock()
	if gcHold.n == 0 {
		gcHold.old = debug.SetGCPercent(-1)
		if debug.SetMemoryLimit(-1) == math.MaxInt64 && gcHold.old >= 0 {
			debug.SetGCPercent(max(gcHold.old, restoreGOGC))
		}
	}
	gcHold.n++
	return func() {
		gcHold.Lock()
		defer gcHold.Unlock()
		if gcHold.n--; gcHold.n == 0 {
			debug.SetGCPercent(gcHold.old)
		}
	}
}

// A cluster member replays from Raft, not from a data dir: a raft
// snapshot (the same entries as a snapshot file) and committed batches.

// loadStream loads a raft snapshot into an empty core and returns its index.
func loadStream(c *core.Core, r io.Reader) (uint64, error) {
	return snapshot.ReadStream(r, c.LoadEntry)
}

// replayBatch replays a batch's records. It goes on past a refused
// record, so as to keep as close to the log as it can, and returns the
// first error.
func replayBatch(c *core.Core, b cluster.Batch) error {
	var first error
	for i, rec := range b.Records {
		if err := c.ReplayRecord(rec); err != nil && first == nil {
			first = fmt.Errorf("record %d of %d: %w", i, len(b.Records), err)
		}
	}
	return first
}
