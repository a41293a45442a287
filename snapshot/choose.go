package snapshot

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
)

// partCheck is the validation of one part, shared by the manifests that
// use it.
type partCheck struct {
	sum partSummary
	err error
}

// checkPart validates the part p names against what the manifest says
// of it.
func (r *recovery) checkPart(cache map[string]*partCheck, p partRef, bits uint) *partCheck {
	name := p.name()
	if c := cache[name]; c != nil {
		return c
	}
	c := r.validatePart(p, bits)
	cache[name] = c
	return c
}

func (r *recovery) validatePart(p partRef, bits uint) *partCheck {
	if p.kind == partState {
		bits = 0
	}
	sum, err := walkPart(r.opts.FS, r.path(p.name()), p.lsn, p.kind, bits, nil)
	if err == nil && (sum.size != p.size || sum.entries != p.entries || sum.crc != p.crc) {
		err = fmt.Errorf("%w: part of %d bytes, %d entries, checksum %08x; the manifest says %d bytes, %d entries, checksum %08x",
			ErrBadSnapshot, sum.size, sum.entries, sum.crc, p.size, p.entries, p.crc)
	}
	return &partCheck{sum: sum, err: err}
}

// checkParts validates the parts of idx not checked yet, on a goroutine
// per core. Reading and checksumming them is most of Open's time when
// the state is large. The results go to cache, for checkPart.
func (r *recovery) checkParts(cache map[string]*partCheck, idx *manifestIndex) {
	var todo []partRef
	for _, p := range idx.parts {
		if cache[p.name()] == nil {
			todo = append(todo, p)
		}
	}
	done := make([]*partCheck, len(todo))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(todo)) {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < len(todo); i = int(next.Add(1)) - 1 {
				done[i] = r.validatePart(todo[i], idx.rangeBits)
			}
		})
	}
	wg.Wait()
	for i, p := range todo {
		cache[p.name()] = done[i]
	}
}

// chooseSnapshot validates snapshots from the newest down.
// It picks the first valid one as the base.
// A manifest is valid when it and every part it uses are.
// The manifests older than the base are read too, but not their parts.
// That keeps their parts while they are fallbacks.
// A corrupt part that every valid manifest uses is an error naming it.
func (r *recovery) chooseSnapshot() error {
	cache := map[string]*partCheck{}
	var badPart string
	var badErr error
	for i := len(r.snaps) - 1; i >= 0; i-- {
		sf := r.snaps[i]
		version, idx, entries, size, err := readManifest(r.opts.FS, r.path(sf.name), sf.lsn, nil)
		sf.size, sf.entries, sf.version = size, entries, version
		if errors.Is(err, ErrNewerFormat) {
			// The older ones may lack records the log no longer holds.
			return err
		}
		if err != nil {
			sf.state = snapInvalid
			r.log.Warn("snapshot is invalid; falling back to the previous one", "file", sf.name, "err", err)
			continue
		}
		if idx != nil {
			sf.parts = sf.parts[:0]
			for _, p := range idx.parts {
				sf.parts = append(sf.parts, p.name())
			}
		}
		if r.base != nil {
			continue // an older fallback: its parts are kept, not read
		}
		if idx != nil {
			r.checkParts(cache, idx)
			bad := false
			for _, p := range idx.parts {
				c := r.checkPart(cache, p, idx.rangeBits)
				if errors.Is(c.err, ErrNewerFormat) {
					return c.err
				}
				if c.err != nil {
					r.log.Warn("snapshot uses an invalid part; falling back to the previous one",
						"file", sf.name, "part", p.name(), "err", c.err)
					if badPart == "" {
						badPart, badErr = p.name(), c.err
					}
					bad = true
					break
				}
			}
			if bad {
				sf.state = snapInvalid
				continue
			}
		}
		sf.state = snapValid
		r.base, r.baseIdx = sf, idx
		if idx != nil {
			r.incr = buildIncr(sf.lsn, idx, cache)
		}
	}
	if r.base == nil && badPart != "" {
		return fmt.Errorf("snapshot part %s, used by every snapshot that could be loaded, is invalid: %w", badPart, badErr)
	}
	return nil
}

// buildIncr rebuilds the structure of a valid manifest from its index and
// its parts' summaries.
func buildIncr(lsn uint64, idx *manifestIndex, cache map[string]*partCheck) *incrState {
	st := &incrState{lsn: lsn, rangeBits: idx.rangeBits, ranges: map[uint64]*rangeState{}}
	for _, rr := range idx.ranges {
		st.ranges[rr.r] = &rangeState{base: rr.base, floor: rr.floor}
	}
	for _, p := range idx.parts {
		pm := &partMeta{ref: p}
		if p.kind == partState {
			st.state = pm
			continue
		}
		pm.perRange = cache[p.name()].sum.perRange
		st.parts = append(st.parts, pm)
		// A range the index leaves out has no older part.
		// Its oldest part is its base, as when it was written.
		for r := range pm.perRange {
			if st.ranges[r] == nil {
				st.ranges[r] = &rangeState{base: p.lsn}
			}
		}
	}
	st.settle()
	return st
}

// sweepParts removes the parts that no snapshot startup could load uses.
// Those are the parts of invalid manifests.
// They are also the parts a crash left before their manifest was published (spec section 7).
func (r *recovery) sweepParts(parts []string) {
	used := map[string]bool{}
	for _, sf := range r.snaps {
		if sf.state != snapInvalid {
			for _, p := range sf.parts {
				used[p] = true
			}
		}
	}
	for _, name := range parts {
		if used[name] {
			continue
		}
		if r.opts.ReadOnly {
			r.log.Warn("snapshot part no snapshot uses (read-only: kept)", "file", name)
			continue
		}
		if err := r.opts.FS.Remove(r.path(name)); err != nil {
			r.log.Warn("cannot remove a snapshot part no snapshot uses", "file", name, "err", err)
			continue
		}
		r.changed = true
		r.log.Info("removed a snapshot part no snapshot uses", "file", name)
	}
}

// replayManifest loads the snapshot the manifest idx describes.
// It loads its head entries, the state part, then the task parts in LSN
// order, then the runs parts in LSN order.
// It takes each entry of a range only from its base on.
func (s *Store) replayManifest(b *snapFile, idx *manifestIndex, l Loader) error {
	if _, _, _, _, err := readManifest(s.fsys, joinDir(s.dir, b.name), b.lsn, l.Entry); err != nil {
		return fmt.Errorf("cannot load snapshot %s: %w", b.name, err)
	}
	for _, p := range idx.parts {
		if p.kind != partState {
			continue
		}
		if _, err := walkPart(s.fsys, joinDir(s.dir, p.name()), p.lsn, p.kind, 0, func(e partEntry) error {
			return l.Entry(e.payload)
		}); err != nil {
			return fmt.Errorf("cannot load snapshot part %s: %w", p.name(), err)
		}
	}
	for _, kind := range []byte{partTasks, partRuns} {
		for _, p := range idx.parts {
			if p.kind != kind {
				continue
			}
			if err := s.replayKeyed(p, idx, l); err != nil {
				return err
			}
		}
	}
	return nil
}

// replayKeyed loads the keyed part p of the manifest idx.
// It takes each entry of a range only from its base on.
func (s *Store) replayKeyed(p partRef, idx *manifestIndex, l Loader) error {
	bits := idx.rangeBits
	last := rangeRec{r: ^uint64(0)}
	if _, err := walkPart(s.fsys, joinDir(s.dir, p.name()), p.lsn, p.kind, bits, func(e partEntry) error {
		if r := e.key >> bits; r != last.r {
			last = idx.rangeOf(r)
		}
		if p.lsn < last.base || e.key < last.floor {
			return nil // void: the range has a newer base, or the key is gone
		}
		if e.payload == nil {
			return l.Drop(e.key)
		}
		return l.Put(e.key, e.payload)
	}); err != nil {
		return fmt.Errorf("cannot load snapshot part %s: %w", p.name(), err)
	}
	return nil
}
