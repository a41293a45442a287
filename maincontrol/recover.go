package maincontrol

import (
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
	entry := func(p []byte) {
		if o.Entry != nil {
			o.Entry(p)
		}
	}
	var res Restored
	snapLSN, err := st.ReplayWith(snapshot.Loader{
		Entry: func(p []byte) error { entry(p); return c.LoadEntry(p) },
		Put:   func(id uint64, p []byte) error { entry(p); return c.LoadTask(id, p) },
		Drop:  c.DropTask,
	}, func(_ uint64, p []byte) error {
		if res.Loaded == nil {
			res.Loaded = c.Freeze()
		}
		return c.ReplayRecord(p)
	})
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
