package core

// Checking and applying the run records, retention of runs, and their
// snapshot entries.

// checkRunRecord validates a run record against the state.
func (c *Core) checkRunRecord(r *record) error {
	if r.run == nil {
		return errRunCorrupt("%s record without its run fields", r.kind)
	}
	switch r.kind {
	case recRun:
		return c.checkRun(r)
	case recRunComp:
		return c.checkRunComp(r)
	case recRunResume:
		return c.checkRunResume(r)
	case recRunCancel:
		if ru := c.runs.byID[r.run.id]; ru == nil {
			return errRunCorrupt("cancel of unknown run %d", r.run.id)
		}
	case recRunDrop:
		for _, id := range r.ids {
			if ru := c.runs.byID[id]; ru == nil || !ru.state.ended() {
				return errRunCorrupt("drop of run %d that is unknown or not ended", id)
			}
		}
	}
	return nil
}

// applyRunRecord applies a checked run record.
func (c *Core) applyRunRecord(r *record) {
	switch r.kind {
	case recRun:
		c.applyRun(r)
	case recRunComp:
		c.applyRunComp(r)
	case recRunResume:
		c.applyRunResume(r)
	case recRunCancel:
		c.setRunState(c.mutRun(r.run.id), runCancelled, r.at)
	case recRunDrop:
		for _, id := range r.ids {
			c.dropRun(id)
		}
	}
}

// runRetention forgets runs that ended once all their tasks are
// forgotten, and the oldest ended runs while the runs kept pass
// --max-runs or --max-run-bytes (protocol section 8.10).
func (c *Core) runRetention(now int64) {
	if !c.runs.sweep || !c.available {
		return
	}
	c.runs.sweep = false
	over := len(c.runs.byID) - c.cfg.MaxRuns
	overB := c.runs.bytes - int64(c.cfg.MaxRunBytes)
	var ids []uint64
	for _, id := range c.runs.order {
		r := c.runs.byID[id]
		if !r.state.ended() {
			continue
		}
		if r.live == 0 || over > 0 || overB > 0 {
			ids = append(ids, id)
			over--
			overB -= r.bytes
		}
		if len(ids) == maxDropPerRecord {
			c.runs.sweep = true // the rest at the next tick
			break
		}
	}
	if len(ids) == 0 {
		return
	}
	rec := c.newRecord(recRunDrop)
	rec.run, rec.at = &runRec{}, now
	rec.ids = append(rec.ids, ids...)
	c.commit(rec)
}

// RunsRecovered finishes recovery for runs: each is looked at again, so
// that what should have followed a change before the crash (its next
// compensation) follows now.
func (c *Core) runsRecovered() {
	c.runs.dirty = c.runs.dirty[:0]
	for _, id := range c.runs.order {
		r := c.runs.byID[id]
		if r.state == runCompensating || r.state == runFailed {
			c.runs.dirty = append(c.runs.dirty, id)
		}
	}
	c.runs.sweep = true
	c.settleRuns()
}

// runsTick retries what waited for the log, and runs retention.
func (c *Core) runsTick(now int64) {
	if len(c.runs.retry) > 0 && c.available {
		c.runs.dirty = append(c.runs.dirty, c.runs.retry...)
		c.runs.retry = nil
	}
	c.settleRuns()
	c.runRetention(now)
}

// frozenRuns is the runs of a snapshot, in id order.
type frozenRuns struct {
	next uint64
	runs []*run
}

// freezeRuns captures the runs: later changes copy a run before writing
// it (mutRun), so the snapshot's stay as they are.
func (c *Core) freezeRuns() frozenRuns {
	f := frozenRuns{next: c.runs.nextID, runs: make([]*run, 0, len(c.runs.order))}
	for _, id := range c.runs.order {
		f.runs = append(f.runs, c.runs.byID[id])
	}
	c.runs.gen++
	return f
}

// writeMeta streams the run counter, an incremental snapshot's head
// entry (its runs are in parts).
func (f *frozenRuns) writeMeta(buf []byte, add func(p []byte) error) error {
	if f.next <= 1 {
		return nil // no run was ever made: older snapshots hold none either
	}
	return add(appendRecord(buf[:0], &record{kind: snapRunMeta, nextID: f.next}))
}

// write streams the run counter and one entry per run, for a whole
// snapshot.
func (f *frozenRuns) write(buf []byte, add func(p []byte) error) error {
	if err := f.writeMeta(buf, add); err != nil || f.next <= 1 {
		return err
	}
	for _, r := range f.runs {
		buf = appendRecord(buf[:0], &record{kind: snapRun, run: &runRec{snap: r}})
		if err := add(buf); err != nil {
			return err
		}
	}
	return nil
}
