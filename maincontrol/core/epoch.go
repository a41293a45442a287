package core

import "fmt"

// Restart epochs (spec section 7). A task frame leaves before its dispatch
// record is durable, so a crash can lose a dispatch an executor still
// holds. So each start begins an epoch, made durable before it serves.
// Every version handed out in it lies above every version of earlier
// epochs, as the epoch fills the high 32 bits. A token from a lost
// dispatch then names no dispatch, and is refused as stale.

// maxEpoch is the last epoch whose versions fit in 64 bits.
const maxEpoch = 1<<32 - 1

// BeginEpoch records the start of a new run, after recovery and before
// anything is served. The epoch is 0 in a new data dir, then one more at
// each start. lost counts the records --recover-truncate dropped
// (Store.Lost). Each may have begun an epoch, so as many are skipped, up
// to the last. The caller makes the record durable before serving,
// whatever the fsync mode.
func (c *Core) BeginEpoch(lost uint64) error {
	c.finishLoad()
	if c.nextEpoch > maxEpoch {
		return fmt.Errorf("every restart epoch is used (%d starts): versions would repeat", c.nextEpoch)
	}
	r := c.newRecord(recEpoch)
	r.epoch = c.nextEpoch + min(lost, maxEpoch-c.nextEpoch)
	if !c.commit(r) {
		return fmt.Errorf("epoch %d refused", r.epoch)
	}
	if lost > 0 {
		c.log.Warn("epochs skipped: records were lost", "epoch", c.epoch, "lost_records", lost)
	}
	c.log.Info("epoch begun", "epoch", c.epoch)
	return nil
}

// Epoch returns this run's epoch.
func (c *Core) Epoch() uint64 { return c.epoch }

// nextVersion is the version of t's next dispatch. It is one more than its
// last within this epoch, else the epoch's first. A task dispatched 2^32
// times in one run would spill into the next epoch's range.
func (c *Core) nextVersion(t *task) uint64 {
	return max(t.version, c.epoch<<32) + 1
}
