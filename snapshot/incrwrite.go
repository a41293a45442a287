package snapshot

import (
	"fmt"
	"path/filepath"
	"slices"
)

// WriteIncremental writes the snapshot at lsn from src (spec section 7).
// It costs what changed since the Store's newest snapshot, not the whole state.
// It writes one part with the changed entries of each range of tasks,
// and one with those of runs (keys from RunKeys up).
// Those parts also hold the ranges it rewrites whole (see incrState.plan).
// A state part follows when the state changed.
// Last comes the manifest snapshot-<lsn>, which lists the parts it uses.
// Each file is published atomically.
// The manifest goes last, only once every record up to lsn is durable.
// A part is never changed once published.
//
// Retention is WriteSnapshot's. The new snapshot and the previous valid one
// are kept, with every part either uses.
// Older manifests go first, then the parts no kept snapshot uses.
// A crash at any step leaves the previous snapshots whole.
// Startup removes the parts no loadable snapshot uses.
//
// The Store's newest snapshot may not be the one src.BaseLSN names.
// It may be a whole snapshot, none, or a failed write may lie in between.
// Then every range is written whole.
// Errors and concurrency are as for WriteSnapshot.
func (s *Store) WriteIncremental(lsn uint64, src Source) error {
	if err := s.beginSnapshot(lsn); err != nil {
		return err
	}
	defer s.snapBusy.Store(false)
	start := now()
	cur := s.incr
	full := cur == nil || cur.lsn != src.BaseLSN() || cur.rangeBits != src.RangeBits()
	var next *incrState
	if full {
		next = &incrState{rangeBits: src.RangeBits(), ranges: map[uint64]*rangeState{}}
	} else {
		next = cur.clone()
		if !src.StateChanged() {
			next.state = cur.state
		}
	}
	acts := next.plan(src, lsn, full)
	var written []string // parts of this attempt, removed if it fails
	fail := func(err error) error {
		for _, name := range written {
			_ = s.fsys.Remove(filepath.Join(s.dir, name))
		}
		return err
	}
	var bytes int64
	floors := map[uint64]uint64{}
	for r, a := range acts {
		if a == actDelta {
			if f := src.Floor(r); f > r<<next.rangeBits {
				floors[r] = max(f, next.ranges[r].floor)
			}
		}
	}
	for _, kind := range []byte{partTasks, partRuns} {
		kp, err := s.writeKeyedPart(lsn, kind, next.rangeBits, acts, floors, src)
		if err != nil {
			return fail(err)
		}
		if kp != nil {
			written = append(written, kp.ref.name())
			bytes += kp.ref.size
			next.parts = append(next.parts, kp)
		}
	}
	for r, a := range acts {
		rs := next.ranges[r]
		if rs == nil {
			rs = &rangeState{}
			next.ranges[r] = rs
		}
		switch a {
		case actFull, actEmpty:
			rs.base, rs.floor = lsn, 0 // the new base holds no key gone
		case actDelta:
			rs.floor = floors[r]
		}
	}
	if full || src.StateChanged() {
		sp, err := s.writeStatePart(lsn, src)
		if err != nil {
			return fail(err)
		}
		next.state = sp
		if sp != nil {
			written = append(written, sp.ref.name())
			bytes += sp.ref.size
		}
	}
	next.lsn = lsn
	next.settle()
	name := snapName(lsn)
	size, entries, err := s.writeManifest(name, lsn, next.index(), src)
	if err != nil {
		if size < 0 { // the manifest may be published, so keep its parts
			return err
		}
		return fail(err)
	}
	bytes += size
	d := now().Sub(start)
	s.stats.snapshot(lsn, size, d)
	s.stats.snapshotWrote(bytes)
	s.log.Info("snapshot written", "file", name, "entries", entries, "parts", len(next.parts), "written_bytes", bytes, "duration", d)
	s.incr = next
	s.retain(&snapFile{name: name, lsn: lsn, size: size, entries: entries, state: snapValid, version: manifestVersion, parts: next.partNames()})
	return nil
}

// writeKeyedPart writes the entries acts asks for of the ranges of kind
// into the part snapshot-<lsn>-<kind>. It returns nil when there is none.
func (s *Store) writeKeyedPart(lsn uint64, kind byte, bits uint, acts map[uint64]int, floors map[uint64]uint64, src Source) (*partMeta, error) {
	var rs []uint64
	for r, a := range acts {
		if (a == actFull || a == actDelta) && keyedKind(r<<bits) == kind {
			rs = append(rs, r)
		}
	}
	if len(rs) == 0 {
		return nil, nil
	}
	slices.Sort(rs)
	return s.writePart(lsn, kind, bits, func(pw *partWriter) error {
		var floor uint64
		drop := func(key uint64) error {
			if key < floor {
				return nil // the range's floor says it is gone
			}
			return pw.put(key, nil)
		}
		for _, r := range rs {
			floor = floors[r]
			if err := src.WriteRange(r, acts[r] == actFull, pw.put, drop); err != nil {
				return err
			}
		}
		return nil
	})
}

// writeStatePart writes the whole state into snapshot-<lsn>-state.
// It returns nil when the state is empty.
func (s *Store) writeStatePart(lsn uint64, src Source) (*partMeta, error) {
	return s.writePart(lsn, partState, 0, func(pw *partWriter) error {
		return src.State(func(p []byte) error {
			if len(p) == 0 {
				return fmt.Errorf("empty state entry")
			}
			return pw.put(0, p)
		})
	})
}

// writePart writes and publishes the part snapshot-<lsn>-<kind> that fill
// puts entries into. It returns nil when fill put none.
func (s *Store) writePart(lsn uint64, kind byte, bits uint, fill func(pw *partWriter) error) (*partMeta, error) {
	name := partName(lsn, kind)
	pw, err := newPartWriter(s.fsys, filepath.Join(s.dir, name), lsn, kind, bits)
	if err != nil {
		return nil, fmt.Errorf("cannot create snapshot part %s: %w", name, err)
	}
	if err := fill(pw); err != nil {
		pw.abort()
		return nil, fmt.Errorf("cannot fill snapshot part %s: %w", name, err)
	}
	if pw.count == 0 {
		pw.abort()
		return nil, nil
	}
	crc, err := pw.finish()
	if err != nil {
		return nil, fmt.Errorf("cannot write snapshot part %s: %w", name, err)
	}
	pm := &partMeta{ref: partRef{kind: kind, lsn: lsn, size: pw.size, entries: pw.count, crc: crc}}
	if bits > 0 { // only keyed parts count entries per range
		pm.perRange = pw.perRange
	}
	return pm, nil
}

// writeManifest publishes the manifest.
// It writes its index, then the source's head entries.
func (s *Store) writeManifest(name string, lsn uint64, idx *manifestIndex, src Source) (int64, uint64, error) {
	return s.writeSnapshotFile(name, lsn, manifestVersion, func(w *SnapshotWriter) error {
		if err := w.Add(idx.encode()); err != nil {
			return err
		}
		return src.Head(w.Add)
	})
}
