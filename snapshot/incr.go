package snapshot

import (
	"maps"
	"slices"
)

// Source is the state an incremental snapshot is written from.
// Store.WriteIncremental reads it. Entries are keyed by a uint64.
// Keys fall in ranges of 1<<RangeBits consecutive keys.
// The Store rewrites what it keeps one range at a time.
// A Source describes its state now and at the snapshot BaseLSN names.
// That is how it can say what changed since.
type Source interface {
	// BaseLSN is the LSN of the snapshot the changes are relative to.
	// It is the last one this Store wrote or loaded.
	// 0, or any other LSN, makes the Store write every range whole.
	BaseLSN() uint64
	// RangeBits is log2 of the keys per range. It must not change.
	RangeBits() uint
	// Head streams the small entries every manifest holds whole.
	Head(add func(p []byte) error) error
	// StateChanged reports whether the unkeyed state changed since BaseLSN.
	// State streams all of it.
	StateChanged() bool
	State(add func(p []byte) error) error
	// Floor returns the lowest key range r holds now.
	// Every key below it in the range is gone and needs no tombstone.
	Floor(r uint64) uint64
	// Ranges calls fn in ascending order for every range that holds
	// entries now or held some at BaseLSN.
	// live is how many entries it holds now.
	// changed says whether any of them changed or went since BaseLSN.
	// settled says whether it is expected to stay as it is: no new key
	// can appear in it, and its entries change no more except by going.
	// A settled range is rewritten as a new base once a quarter of it is
	// in deltas, with the snapshot's changes when it just settled.
	Ranges(fn func(r uint64, live int, changed, settled bool))
	// WriteRange streams range r in ascending key order.
	// When full is set it streams every entry.
	// Otherwise it puts the entries that changed since BaseLSN.
	// It drops the keys gone since then.
	WriteRange(r uint64, full bool, put func(key uint64, p []byte) error, drop func(key uint64) error) error
}

// Compaction limits. A range's base is rewritten in three cases.
// Its deltas outgrow it, or it is settled with a quarter of it in deltas.
// Or the part holding its base is mostly void.
// The rest of the time a snapshot writes only what changed.
const (
	// maxDeltaParts bounds the parts kept for a delta they hold.
	// Beyond it, the ranges holding the oldest are rewritten.
	// It bounds the manifest and the files startup reads.
	maxDeltaParts = 128
	// minTombRebase is the fewest tombstones that make a range rewritten
	// once they are three times its entries left.
	minTombRebase = 64
)

func tombs(rs *rangeState) int { return rs.deltaN - rs.deltaImg }

// partMeta is a part of the newest snapshot, as the Store keeps it.
type partMeta struct {
	ref      partRef
	perRange map[uint64]rangeCount // task parts: entries per range
}

// rangeState is what the Store knows of one key range.
type rangeState struct {
	base     uint64 // LSN of the part holding its base (older entries are void)
	baseN    int    // entries in its base
	deltaN   int    // entries in parts after its base
	deltaImg int    // images (not tombstones) among them
	// floor is the range's lowest key left, or 0 when none is gone.
	// Entries of keys below it are void.
	// So a range expiring in key order writes no tombstones.
	floor uint64
}

// incrState is the structure of the newest snapshot.
// It holds the parts and the base of each range.
type incrState struct {
	lsn       uint64
	rangeBits uint
	parts     []*partMeta // task parts, ascending LSN
	state     *partMeta   // the state part, nil when there is no state
	ranges    map[uint64]*rangeState
}

func (st *incrState) clone() *incrState {
	n := &incrState{lsn: st.lsn, rangeBits: st.rangeBits, parts: slices.Clone(st.parts), state: st.state,
		ranges: make(map[uint64]*rangeState, len(st.ranges))}
	for r, rs := range st.ranges {
		c := *rs
		n.ranges[r] = &c
	}
	return n
}

func (st *incrState) baseOf(r uint64) uint64 {
	if rs := st.ranges[r]; rs != nil {
		return rs.base
	}
	return 0
}

// inForce reports whether part p holds entries of range r that count.
func (st *incrState) inForce(p *partMeta, r uint64) bool { return p.ref.lsn >= st.baseOf(r) }

// settle recounts every range from the parts.
// It drops the parts no range needs and the ranges nothing refers to.
func (st *incrState) settle() {
	for _, rs := range st.ranges {
		rs.baseN, rs.deltaN, rs.deltaImg = 0, 0, 0
	}
	kept := st.parts[:0]
	for _, p := range st.parts {
		alive := false
		for r, rc := range p.perRange {
			rs := st.ranges[r]
			if rs == nil {
				rs = &rangeState{}
				st.ranges[r] = rs
			}
			switch {
			case p.ref.lsn == rs.base:
				rs.baseN += rc.n
				alive = true
			case p.ref.lsn > rs.base:
				rs.deltaN += rc.n
				rs.deltaImg += rc.images
				alive = true
			}
		}
		if alive {
			kept = append(kept, p)
		}
	}
	clear(st.parts[len(kept):])
	st.parts = kept
	need := st.neededRecords()
	for r, rs := range st.ranges {
		if rs.baseN == 0 && rs.deltaN == 0 && !need[r] {
			delete(st.ranges, r)
		}
	}
}

// neededRecords returns the ranges whose record must be in the manifest.
// A range needs one when a kept part older than its base holds its entries.
// It also needs one when a kept part holds entries its floor voids.
func (st *incrState) neededRecords() map[uint64]bool {
	need := map[uint64]bool{}
	for _, p := range st.parts {
		for r := range p.perRange {
			if rs := st.ranges[r]; rs != nil && (rs.base > p.ref.lsn || rs.floor > 0) {
				need[r] = true
			}
		}
	}
	return need
}

// index returns the manifest index of the structure.
func (st *incrState) index() *manifestIndex {
	m := &manifestIndex{rangeBits: st.rangeBits}
	for _, p := range st.parts {
		m.parts = append(m.parts, p.ref)
	}
	if st.state != nil {
		m.parts = append(m.parts, st.state.ref)
		slices.SortStableFunc(m.parts, func(a, b partRef) int {
			switch {
			case a.lsn < b.lsn:
				return -1
			case a.lsn > b.lsn:
				return 1
			}
			return 0
		})
	}
	need := st.neededRecords()
	for _, r := range slices.Sorted(maps.Keys(need)) {
		m.ranges = append(m.ranges, rangeRec{r: r, base: st.ranges[r].base, floor: st.ranges[r].floor})
	}
	return m
}

// partNames returns the files of the structure.
func (st *incrState) partNames() []string {
	var names []string
	for _, p := range st.parts {
		names = append(names, p.ref.name())
	}
	if st.state != nil {
		names = append(names, st.state.ref.name())
	}
	return names
}

// Actions a snapshot takes for a range.
const (
	actNone  = iota
	actDelta // write what changed
	actFull  // rewrite the range whole as a new base
	actEmpty // the range is empty, so a new base with no entry
)

// settlesNow reports whether a settled range with deltas still on disk
// is rewritten whole now: its last changes go into its new base, not
// into a delta the next snapshot would rewrite.
func settlesNow(rs *rangeState, live int, settled bool) bool {
	return settled && rs != nil && rs.deltaImg > 0 && 4*rs.deltaImg >= live
}

// plan decides what the snapshot at lsn writes of each range.
// full means the Store has no structure the Source's changes apply to.
func (st *incrState) plan(src Source, lsn uint64, full bool) map[uint64]int {
	acts := map[uint64]int{}
	lives := map[uint64]int{}
	src.Ranges(func(r uint64, live int, changed, settled bool) {
		lives[r] = live
		rs := st.ranges[r]
		switch {
		case full:
			if live > 0 {
				acts[r] = actFull
			}
		case live == 0:
			if rs != nil || changed {
				acts[r] = actEmpty
			}
		case changed:
			switch {
			case rs == nil || rs.baseN+rs.deltaN == 0:
				acts[r] = actFull
			case rs.deltaN > 2*(rs.baseN+live):
				acts[r] = actFull
			case tombs(rs) >= max(3*live, minTombRebase):
				// Mostly expired. The few entries left cost less
				// than the parts its tombstones hold.
				acts[r] = actFull
			case settlesNow(rs, live, settled):
				acts[r] = actFull
			default:
				acts[r] = actDelta
			}
		case rs == nil || rs.baseN+rs.deltaN == 0:
			// No part holds the range, yet it has entries: the
			// manifest loaded kept them in its head (runs, before
			// they had parts).
			acts[r] = actFull
		case settlesNow(rs, live, settled):
			acts[r] = actFull
		}
	})
	if full {
		return acts
	}
	rebase := func(r uint64) {
		if acts[r] == actFull || acts[r] == actEmpty {
			return
		}
		if lives[r] > 0 {
			acts[r] = actFull
		} else {
			acts[r] = actEmpty
		}
	}
	tentBase := func(r uint64) uint64 {
		if a := acts[r]; a == actFull || a == actEmpty {
			return lsn
		}
		return st.baseOf(r)
	}
	// A part whose bases are mostly void has the rest of them rewritten.
	// Void means superseded or expired.
	// At three quarters void, the rewrite costs a third of what it frees.
	for _, p := range st.parts {
		var void uint64
		var bases []uint64
		for r, rc := range p.perRange {
			switch b := tentBase(r); {
			case b > p.ref.lsn:
				void += uint64(rc.n)
			case b == p.ref.lsn:
				bases = append(bases, r)
			}
		}
		if len(bases) > 0 && 4*void > 3*p.ref.entries {
			for _, r := range bases {
				rebase(r)
			}
		}
	}
	// Too many parts are kept for their deltas.
	// The ranges holding the oldest ones get new bases.
	for {
		var held []*partMeta
		for _, p := range st.parts {
			for r := range p.perRange {
				if tentBase(r) < p.ref.lsn {
					held = append(held, p)
					break
				}
			}
		}
		if len(held) < maxDeltaParts {
			break
		}
		for r := range held[0].perRange {
			if tentBase(r) < held[0].ref.lsn { // its bases hold it no longer than they must
				rebase(r)
			}
		}
	}
	return acts
}
