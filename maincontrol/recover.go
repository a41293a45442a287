package maincontrol

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/apollo11/apollo11/maincontrol/core"
	"github.com/apollo11/apollo11/snapshot"
)

// RestoreOptions says what Restore does besides replaying.
type RestoreOptions struct {
	// Entry, when set, sees each snapshot entry before the core loads it.
	Entry func(payload []byte)
	// Serve readies the state for serving: st must be writable and not
	// started. See Restore.
	Serve bool
	// Logger takes a warning Restore can recover from.
	Logger *slog.Logger
}

// Restored is what Restore found.
type Restored struct {
	// Loaded is the state as the snapshot left it, before the log's
	// records, at SnapshotLSN: the next snapshot writes its changes
	// against it.
	Loaded      *core.Snapshot
	SnapshotLSN uint64
}

// Restore is the one recovery sequence, for the main control and for
// `apollo11 inspect` alike. It replays st into c, a core just made: the
// snapshot, then the log. Core.Recovered then settles what the restart
// left open. The ids of records a --recover-truncate cut dropped are
// skipped, as they may have been handed out. A nil st is a memory-only
// main control: nothing to replay.
//
// With o.Serve, before Recovered, every stored task must fit the frames
// (Core.CheckFrames). After it, a restart epoch begins, and the epoch and
// every record recovery made are fsynced, whatever --fsync says: task
// frames do not wait for their dispatch records, so a version of a lost
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

// A restart decodes on one goroutine while the core loads on its own:
// decoding is pure, about half of a restart's work, and a host has two
// cores or more. batchLen entries make a batch; batchesAhead bound how
// far decoding runs ahead, and so the memory it holds.
const (
	batchLen     = 512
	batchesAhead = 4
)

// loadBatch is a batch of decoded entries or records, never both: log
// says it holds records.
type loadBatch struct {
	b   *core.LoadBatch
	log bool
}

// errLoadStopped stops the reading once the core has refused a batch.
var errLoadStopped = errors.New("recovery stopped")

// replay replays st into c, reading and decoding on a goroutine of its
// own, and returns the snapshot's LSN. entry, when set, sees each
// snapshot entry on that goroutine. res.Loaded is the state when the
// first log record comes, before it is applied.
func replay(st *snapshot.Store, c *core.Core, entry func(p []byte), res *Restored) (uint64, error) {
	full := make(chan *loadBatch, batchesAhead)
	free := make(chan *loadBatch, batchesAhead+2)
	stop := make(chan struct{})
	var snapLSN uint64
	var readErr error
	go func() {
		defer close(full)
		var dec core.LoadDecoder
		cur := &loadBatch{b: core.NewLoadBatch(&dec)}
		send := func(log bool) error {
			if cur.b.Len() > 0 {
				select {
				case full <- cur:
				case <-stop:
					return errLoadStopped
				}
				select {
				case cur = <-free:
				default:
					cur = &loadBatch{b: core.NewLoadBatch(&dec)}
				}
			}
			cur.log = log
			return nil
		}
		added := func(err error) error {
			if err == nil && cur.b.Len() >= batchLen {
				return send(cur.log)
			}
			return err
		}
		see := func(p []byte) {
			if entry != nil {
				entry(p)
			}
		}
		snapLSN, readErr = st.ReplayWith(snapshot.Loader{
			Entry: func(p []byte) error { see(p); return added(cur.b.Entry(p)) },
			Put:   func(id uint64, p []byte) error { see(p); return added(cur.b.Put(id, p)) },
			Drop:  func(id uint64) error { cur.b.Drop(id); return added(nil) },
		}, func(lsn uint64, p []byte) error {
			if !cur.log {
				if err := send(true); err != nil {
					return err
				}
			}
			return added(cur.b.Record(lsn, p))
		})
		if readErr == nil {
			readErr = send(false)
		}
	}()
	var loadErr error
	for lb := range full {
		if loadErr != nil {
			continue // drain, so the reader stops
		}
		if lb.log && res.Loaded == nil {
			res.Loaded = c.Freeze()
		}
		if loadErr = c.LoadBatch(lb.b); loadErr != nil {
			close(stop)
			continue
		}
		lb.b.Reset()
		select {
		case free <- lb:
		default:
		}
	}
	if loadErr != nil {
		return 0, loadErr
	}
	return snapLSN, readErr
}
