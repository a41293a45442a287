package core

import (
	"fmt"
	"maps"
	"slices"
)

// Changes is a snapshot seen as what changed since an earlier one. An
// incremental snapshot needs it. The store asks which ranges of ids
// (chunks) changed and writes only those tasks. Both snapshots are frozen,
// so this runs on any goroutine. It implements snapshot.Source.
type Changes struct {
	cur, prev *Snapshot
	base      uint64
	// bits is log2 of the ids per range. It is chunkBits, or fewer in tests
	// that want many ranges from few tasks.
	bits uint
}

// Since returns s as changes since prev, the snapshot written (or loaded)
// at LSN base. A nil prev makes every range changed.
func (s *Snapshot) Since(prev *Snapshot, base uint64) *Changes {
	if prev == nil {
		base = 0
	}
	return &Changes{cur: s, prev: prev, base: base, bits: chunkBits}
}

// BaseLSN is the LSN of the snapshot the changes are relative to.
func (d *Changes) BaseLSN() uint64 { return d.base }

// RangeBits is the ids per range, one chunk of the task table.
func (d *Changes) RangeBits() uint { return d.bits }

// Head streams the entries kept whole in every snapshot: meta, the
// executors, paused types, schedules and the run counter.
func (d *Changes) Head(add func(p []byte) error) error {
	var buf []byte
	buf = appendRecord(buf, &d.cur.meta)
	if err := add(buf); err != nil {
		return err
	}
	for i := range d.cur.execs {
		buf = appendRecord(buf[:0], &d.cur.execs[i])
		if err := add(buf); err != nil {
			return err
		}
	}
	if err := d.cur.writePaused(buf, add); err != nil {
		return err
	}
	return d.cur.runs.writeMeta(buf, add)
}

// StateChanged reports whether the shared state changed since prev.
func (d *Changes) StateChanged() bool { return d.prev == nil || d.prev.stateTok != d.cur.stateTok }

// State streams the shared state, in key order.
func (d *Changes) State(add func(p []byte) error) error {
	var buf []byte
	for _, k := range slices.Sorted(maps.Keys(d.cur.state)) {
		buf = appendRecord(buf[:0], &record{kind: snapState, key: k, args: d.cur.state[k]})
		if err := add(buf); err != nil {
			return err
		}
	}
	return nil
}

// Ranges calls fn for every range in either snapshot, in key order:
// tasks, then runs (snaprun.go). A chunk changed when its pointer did,
// as chunks are copied on write.
func (d *Changes) Ranges(fn func(r uint64, live int, changed, settled bool)) {
	cur := d.cur.tasks
	var prev frozenTable
	if d.prev != nil {
		prev = d.prev.tasks
	}
	i, j := 0, 0
	for i < len(cur.nums) || j < len(prev.nums) {
		switch {
		case j == len(prev.nums) || (i < len(cur.nums) && cur.nums[i] < prev.nums[j]):
			d.chunkRanges(cur.nums[i], cur.chunks[i], nil, fn)
			i++
		case i == len(cur.nums) || prev.nums[j] < cur.nums[i]:
			d.chunkRanges(prev.nums[j], nil, prev.chunks[j], fn)
			j++
		default:
			d.chunkRanges(cur.nums[i], cur.chunks[i], prev.chunks[j], fn)
			i++
			j++
		}
	}
	d.runRanges(fn)
}

// chunkRanges reports the ranges of chunk n, now and was (either nil).
// A range is settled once every id in it is taken and each of its tasks
// has ended: then only retention changes it. A range of pending tasks is
// not: under a long queue its tasks still move, and a rewrite then would
// be followed by another once they end.
func (d *Changes) chunkRanges(n uint64, now, was *chunk, fn func(r uint64, live int, changed, settled bool)) {
	taken := func(r uint64) bool { return (r+1)<<d.bits <= d.cur.nextID }
	if d.bits == chunkBits {
		live, ended := 0, 0
		if now != nil {
			live = int(now.live)
			ended = now.ended()
		}
		fn(n, live, now != was, taken(n) && ended == live)
		return
	}
	per := uint64(1) << d.bits
	for k := range uint64(chunkSize) / per {
		r := n<<(chunkBits-d.bits) + k
		live, had, changed, open := 0, false, false, false
		for i := k * per; i < (k+1)*per; i++ {
			var t, o task
			if now != nil {
				t = now.slots[i]
			}
			if was != nil {
				o = was.slots[i]
			}
			if t.id != 0 {
				live++
				open = open || !t.state.Terminal()
			}
			had = had || o.id != 0
			changed = changed || t != o
		}
		if live > 0 || had {
			fn(r, live, changed, taken(r) && !open)
		}
	}
}

// WriteRange streams range r: every task when full, else the tasks that
// differ from prev's and the ids prev had and s has not.
func (d *Changes) WriteRange(r uint64, full bool, put func(key uint64, p []byte) error, drop func(key uint64) error) error {
	if isRunKey(r << d.bits) {
		return d.writeRunRange(r, full, put, drop)
	}
	shift := chunkBits - d.bits
	now := findChunk(d.cur.tasks, r>>shift)
	var was *chunk
	if !full && d.prev != nil {
		was = findChunk(d.prev.tasks, r>>shift)
	}
	var buf []byte
	var rec record
	per := uint64(1) << d.bits
	lo := (r & (1<<shift - 1)) * per
	for i := lo; i < lo+per; i++ {
		var t, o *task
		if now != nil && now.slots[i].id != 0 {
			t = &now.slots[i]
		}
		if was != nil && was.slots[i].id != 0 {
			o = &was.slots[i]
		}
		switch {
		case t != nil && (full || o == nil || *o != *t):
			taskEntry(t, &rec)
			buf = appendRecord(buf[:0], &rec)
			if err := put(t.id, buf); err != nil {
				return err
			}
		case t == nil && o != nil && !full:
			if err := drop(o.id); err != nil {
				return err
			}
		}
	}
	return nil
}

// Floor returns the lowest id range r holds (its end when none).
func (d *Changes) Floor(r uint64) uint64 {
	if isRunKey(r << d.bits) {
		return d.runFloor(r)
	}
	shift := chunkBits - d.bits
	per := uint64(1) << d.bits
	lo := (r & (1<<shift - 1)) * per
	if ch := findChunk(d.cur.tasks, r>>shift); ch != nil {
		for i := lo; i < lo+per; i++ {
			if id := ch.slots[i].id; id != 0 {
				return id
			}
		}
	}
	return (r + 1) << d.bits
}

func findChunk(f frozenTable, r uint64) *chunk {
	if i, ok := slices.BinarySearch(f.nums, r); ok {
		return f.chunks[i]
	}
	return nil
}

// LoadTask loads a task entry of an incremental snapshot's part,
// replacing the task with the same id loaded from an older part. A key
// from snapshot.RunKeys up is a run's entry.
func (c *Core) LoadTask(id uint64, payload []byte) error {
	var r record
	if isRunKey(id) {
		if err := decodeRunEntry(id, payload, &r, nil); err != nil {
			return err
		}
		c.putRun(&r)
		return nil
	}
	if err := decodeTaskEntry(id, payload, &r, nil); err != nil {
		return err
	}
	return c.putTask(&r)
}

// decodeTaskEntry decodes the entry keyed id of a snapshot part into r.
func decodeTaskEntry(id uint64, payload []byte, r *record, names *interner) error {
	if err := decodeRecordNames(payload, r, names); err != nil {
		return err
	}
	if r.kind != snapTask || r.id != id {
		return fmt.Errorf("%w: %s entry for task %d in a snapshot part, keyed %d", ErrCorrupt, r.kind, r.id, id)
	}
	return nil
}

// putTask loads a decoded task entry in place of an older part's.
func (c *Core) putTask(r *record) error {
	if err := c.DropTask(r.id); err != nil {
		return err
	}
	return c.loadRecord(r)
}

// DropTask forgets a task (or run, keyed from snapshot.RunKeys up)
// loaded from an older part of an incremental snapshot, because a newer
// part says it is gone.
func (c *Core) DropTask(id uint64) error {
	if isRunKey(id) {
		c.dropLoadedRun(id)
		return nil
	}
	c.loading = true
	t := c.tasks.get(id)
	if t == nil {
		return nil
	}
	c.counts[t.state]--
	t.typ.counts[t.state]--
	c.releaseType(t.typ)
	c.tasks.remove(id)
	return nil
}
