package snapshot

import "fmt"

// checkCoverage checks that the log holds every record after the base snapshot.
// It sets lastLSN.
// A log may end before a valid base snapshot, but only after a power loss with FsyncNever.
// The snapshot then covers it wholly.
// Its segments are removed so that the next record starts a new one.
//
// A newer, invalid snapshot was published only once the log was durable up to its LSN.
// So every record it covered was confirmed.
// The log may not bring them back, because it starts after the base or ends before that LSN.
// Then Replay fails naming them.
// With RecoverTruncate they are counted as lost.
// What cannot be replayed is then dropped (cutGone).
func (r *recovery) checkCoverage() error {
	var base, newest uint64
	from := "no valid snapshot"
	if r.base != nil {
		base, from = r.base.lsn, r.base.name
	}
	newestName := ""
	if n := len(r.snaps); n > 0 {
		newest, newestName = r.snaps[n-1].lsn, r.snaps[n-1].name
	}
	if len(r.segs) == 0 {
		r.lastLSN = base
		if newest > base {
			return r.missing(base+1, newest, base, fmt.Sprintf("snapshot %s is invalid, %s is loaded and there is no log", newestName, from))
		}
		return nil
	}
	first, lastSeg := r.segs[0], r.segs[len(r.segs)-1]
	r.lastLSN = lastSeg.last
	switch {
	case first.first > base+1:
		why := fmt.Sprintf("replay starts from %s and the log starts at %s", from, first.name)
		if newest > base {
			why = fmt.Sprintf("snapshot %s is invalid, %s", newestName, why)
		}
		return r.missing(base+1, first.first-1, base, why)
	case lastSeg.last < base && newest > base:
		return r.missing(base+1, newest, base,
			fmt.Sprintf("snapshot %s is invalid, %s is loaded and the log ends before it, at LSN %d in %s", newestName, from, lastSeg.last, lastSeg.name))
	case lastSeg.last < base:
		r.log.Warn("the log ends before the snapshot (records lost from the OS cache?); removing it",
			"snapshot", from, "log_last_lsn", lastSeg.last)
		if err := r.dropLog(); err != nil {
			return err
		}
		r.lastLSN = base
	case lastSeg.last < newest && newest > base:
		return r.missing(lastSeg.last+1, newest, lastSeg.last,
			fmt.Sprintf("invalid snapshot %s was the only copy; the log ends at %s", newestName, lastSeg.name))
	}
	return nil
}

// missing handles records lo..hi that neither a valid snapshot nor the log holds.
// Without RecoverTruncate Replay fails naming them.
// With it they are counted as lost, and the log is cut after LSN keep.
// Every segment goes when keep is the base's LSN.
// The invalid snapshots past keep are removed, since the next Open would refuse them again.
func (r *recovery) missing(lo, hi, keep uint64, why string) error {
	if !r.opts.RecoverTruncate {
		r.replayErr = fmt.Errorf("%w: records %d..%d (%d records) are in no valid snapshot and not in the log: %s", ErrMissingLog, lo, hi, hi-lo+1, why)
		return nil
	}
	last := max(hi, keep)
	if n := len(r.snaps); n > 0 {
		last = max(last, r.snaps[n-1].lsn)
	}
	if n := len(r.segs); n > 0 {
		last = max(last, r.segs[n-1].last)
	}
	lost := last - keep
	r.log.Error("RecoverTruncate: confirmed records are LOST", "first_lsn", keep+1, "last_lsn", keep+lost,
		"why", why)
	if err := r.addLost(lost); err != nil {
		return err
	}
	if n := len(r.segs); n > 0 && r.segs[n-1].last != keep {
		// The log either ends before keep or cannot follow it.
		if err := r.dropLog(); err != nil {
			return err
		}
	}
	r.lastLSN = keep
	return r.removeInvalidAfter(keep)
}

// dropLog removes every segment, because none of its records can be replayed.
func (r *recovery) dropLog() error {
	for _, seg := range r.segs {
		if err := r.remove(seg.name); err != nil {
			return err
		}
	}
	r.segs = nil
	return nil
}

// removeInvalidAfter removes the invalid snapshots past LSN keep, unless ReadOnly.
// RecoverTruncate gave up their records, and the log now ends before them.
// So every later Open would refuse the dir again.
func (r *recovery) removeInvalidAfter(keep uint64) error {
	kept := r.snaps[:0:0]
	for _, sf := range r.snaps {
		if sf.state != snapInvalid || sf.lsn <= keep {
			kept = append(kept, sf)
			continue
		}
		r.log.Error("RecoverTruncate removes an invalid snapshot whose records are lost", "file", sf.name)
		if r.opts.ReadOnly {
			continue
		}
		if err := r.opts.FS.Remove(r.path(sf.name)); err != nil {
			return fmt.Errorf("cannot remove invalid snapshot %s: %w", sf.name, err)
		}
		r.changed = true
	}
	r.snaps = kept
	return nil
}
