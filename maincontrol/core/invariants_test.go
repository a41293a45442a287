package core

import (
	"fmt"
	"slices"
)

// checkInvariants returns the first broken structural invariant of c, or
// nil. It looks at the indexes the core keeps beside the task table: counts,
// executor assignments and loads, queues, timers, the retry cap, keys,
// dependencies, the shared state's size and the bytes tasks hold.
//
// An executor may hold more tasks than its slots after it re-registered
// with fewer (it gets no new task until it is under them), so the slots
// rule is that no load grows past the slots: loads holds each executor's
// load at the previous check, and is updated.
func checkInvariants(c *Core, loads map[string]int) error {
	c.finishLoad()
	if n := c.countStateBytes(); c.stateBytes != n {
		return fmt.Errorf("shared state size %d, counted %d", c.stateBytes, n)
	}
	if p, r := c.countTaskBytes(); c.pendingBytes != p || c.retainedBytes != r {
		return fmt.Errorf("task bytes: pending %d, retained %d; counted %d, %d", c.pendingBytes, c.retainedBytes, p, r)
	}
	if err := checkDescs(c); err != nil {
		return err
	}
	now := c.now()
	var counts [NumStates + 1]int
	total := 0
	holders := map[uint64]int{}
	for _, e := range c.execs {
		if e.load != e.tasks.len() {
			return fmt.Errorf("executor %s: load %d, %d tasks", e.id, e.load, e.tasks.len())
		}
		if e.load > e.slots && e.load > loads[e.id] {
			return fmt.Errorf("executor %s: load %d over %d slots (was %d)", e.id, e.load, e.slots, loads[e.id])
		}
		loads[e.id] = e.load
		for id, a := range e.tasks.all() {
			holders[id]++
			t := c.tasks.get(id)
			if t == nil || (t.state != Dispatched && t.state != Running) || t.execID != e.id || t.version != a.ver {
				return fmt.Errorf("executor %s holds %d.%d, which is %+v", e.id, id, a.ver, t)
			}
		}
		free := e.connected() && e.hasFreeSlot()
		for i, tt := range e.types {
			if in := e.entries[i].idx >= 0; in != free {
				return fmt.Errorf("executor %s: in the free heap of %s: %v, free: %v", e.id, tt.name, in, free)
			}
		}
	}
	active := map[*taskType]int{}
	for _, e := range c.execs {
		for id := range e.tasks.all() {
			active[c.tasks.get(id).typ]++
		}
	}
	valid := map[*taskType]map[uint64]int{}
	for _, tt := range c.types {
		if tt.active() != active[tt] {
			return fmt.Errorf("type %s: active %d, %d held by executors", tt.name, tt.active(), active[tt])
		}
		v := map[uint64]int{}
		for p := range tt.queues {
			q := tt.queues[p]
			if q == nil {
				continue
			}
			if p > int(tt.top) && q.n > 0 {
				return fmt.Errorf("type %s: %d entries at priority %d, above top %d", tt.name, q.n, p, tt.top)
			}
			for i := 0; i < q.n; i++ {
				if e := q.buf[(q.head+i)%len(q.buf)]; c.validEntry(e) {
					if c.tasks.get(e.id).priority != uint8(p) {
						return fmt.Errorf("task %d queued at priority %d", e.id, p)
					}
					v[e.id]++
				}
			}
		}
		valid[tt] = v
	}
	timers := map[timer]bool{}
	for _, tm := range c.timers {
		timers[tm] = true
	}
	pendingOf := map[*taskType]int{}
	armed, unarmed := 0, 0
	var err error
	restored := map[uint64]bool{}
	for _, e := range c.execs {
		for id, a := range e.tasks.all() {
			if a.restored {
				restored[id] = true
			}
		}
	}
	c.tasks.scan(0, 0, func(t *task) bool {
		total++
		counts[t.state]++
		if t.id >= c.nextID {
			err = fmt.Errorf("task %d at or above next id %d", t.id, c.nextID)
			return false
		}
		due := t.dueMs > 0
		delayed := t.flags&flagDelayed != 0
		hasTimer := timers[timer{at: t.dueMs, id: t.id, ver: t.version, kind: timerDue}]
		switch t.state {
		case Dispatched, Running:
			if holders[t.id] != 1 {
				err = fmt.Errorf("task %d %s held by %d executors", t.id, t.state, holders[t.id])
			}
			// A restored dispatch waits for its listing, whatever its due.
			if due && !restored[t.id] && (!hasTimer || t.dueMs <= now) {
				err = fmt.Errorf("task %d %s: due %d (now %d), timer %v", t.id, t.state, t.dueMs, now, hasTimer)
			}
			if t.state == Dispatched && !due {
				err = fmt.Errorf("task %d dispatched with no start deadline", t.id)
			}
		case Pending:
			if delayed != due {
				err = fmt.Errorf("task %d pending: delayed %v, due %d", t.id, delayed, t.dueMs)
			}
			if delayed && (!hasTimer || t.dueMs <= now) {
				err = fmt.Errorf("task %d delayed to %d (now %d), timer %v", t.id, t.dueMs, now, hasTimer)
			}
			want := 1
			if delayed {
				want = 0
			} else {
				pendingOf[t.typ]++
			}
			if got := valid[t.typ][t.id]; got != want {
				err = fmt.Errorf("task %d pending (delayed %v) has %d live queue entries", t.id, delayed, got)
			}
		case Retrying:
			if t.flags&flagArmed != 0 {
				armed++
				if !due || !hasTimer || t.dueMs <= now {
					err = fmt.Errorf("task %d armed with due %d (now %d), timer %v", t.id, t.dueMs, now, hasTimer)
				}
			} else {
				unarmed++
				if due {
					err = fmt.Errorf("task %d waits for the retry cap with due %d", t.id, t.dueMs)
				}
			}
		case Waiting:
			// It waits for a dependency not ended; one that failed or was
			// cancelled only when it tolerates it, marked for a requeue.
			live, failed := false, false
			for d := range t.deps().all() {
				dt := c.tasks.get(d)
				switch {
				case dt == nil || dt.state == Succeeded:
				case !dt.state.Terminal():
					live = true
				case !t.whenFailed() && !dt.optional():
					err = fmt.Errorf("task %d waits on %d, which is %s", t.id, d, dt.state)
				case dt.flags&flagTolerated == 0:
					err = fmt.Errorf("task %d waits past %d, which is %s and not marked tolerated", t.id, d, dt.state)
				default:
					failed = true
				}
			}
			if !live {
				err = fmt.Errorf("task %d waits though its dependencies ended", t.id)
			}
			if failed && t.whenFailed() && t.flags&flagDepFailed == 0 {
				err = fmt.Errorf("task %d (when=failed) has a failed dependency but no flagDepFailed", t.id)
			}
		}
		if t.state != Dispatched && t.state != Running && holders[t.id] != 0 {
			err = fmt.Errorf("task %d %s held by an executor", t.id, t.state)
		}
		if t.state.Terminal() && (due || t.flags&(flagDelayed|flagArmed) != 0) {
			err = fmt.Errorf("terminal task %d with due %d flags %b", t.id, t.dueMs, t.flags)
		}
		if k := t.key(); k != "" && c.keys[k] != t.id {
			err = fmt.Errorf("task %d key %q maps to %d", t.id, k, c.keys[k])
		}
		return err == nil
	})
	if err != nil {
		return err
	}
	if counts != c.counts {
		return fmt.Errorf("counts %v, scan %v", c.counts, counts)
	}
	if total != c.tasks.count {
		return fmt.Errorf("table count %d, scan %d", c.tasks.count, total)
	}
	for i, ch := range c.tasks.chunks {
		if ch == nil {
			continue
		}
		var st [NumStates + 1]int32
		var live int32
		for j := range ch.slots {
			if t := &ch.slots[j]; t.id != 0 {
				if want := (c.tasks.first+uint64(i))<<chunkBits + uint64(j); t.id != want {
					return fmt.Errorf("task %d in the slot of %d", t.id, want)
				}
				st[t.state]++
				live++
				for s := range ch.inState {
					if set := ch.inState[s][j/64]>>(j%64)&1 == 1; set != (State(s) == t.state) {
						return fmt.Errorf("task %d in state %s: state %s bit %v", t.id, t.state, State(s), set)
					}
				}
			} else {
				for s := range ch.inState {
					if ch.inState[s][j/64]>>(j%64)&1 == 1 {
						return fmt.Errorf("empty slot %d of chunk %d: state %s bit set", j, i, State(s))
					}
				}
			}
		}
		if st != ch.states || live != ch.live || live == 0 {
			return fmt.Errorf("chunk %d: states %v live %d, slots say %v %d", i, ch.states, ch.live, st, live)
		}
	}
	if len(holders) != counts[Dispatched]+counts[Running] {
		return fmt.Errorf("%d tasks held by executors, %d dispatched or running", len(holders), counts[Dispatched]+counts[Running])
	}
	refs := map[*taskType]int{}
	c.tasks.scan(0, 0, func(t *task) bool { refs[t.typ]++; return true })
	for _, e := range c.execs {
		for _, tt := range e.types {
			refs[tt]++
		}
	}
	for tt, n := range refs {
		if c.types[tt.name] != tt {
			return fmt.Errorf("type %s: referenced %d times but not the known type of that name", tt.name, n)
		}
	}
	for _, tt := range c.types {
		if tt.refs != refs[tt] || tt.refs == 0 {
			return fmt.Errorf("type %s: refs %d, referenced by %d tasks and executors", tt.name, tt.refs, refs[tt])
		}
		if tt.pending != pendingOf[tt] {
			return fmt.Errorf("type %s: pending %d, queued tasks %d", tt.name, tt.pending, pendingOf[tt])
		}
		// Dispatch is eager: no queued task while an executor of its type
		// has a free slot, unless the type is paused or its policy holds it.
		if c.available && pendingOf[tt] > 0 && len(tt.free.items) > 0 && !tt.paused && c.mayDispatch(tt) {
			return fmt.Errorf("type %s: %d queued tasks and a free executor %s", tt.name, pendingOf[tt], tt.free.items[0].e.id)
		}
		for i, en := range tt.free.items {
			if ti := slices.Index(en.e.types, tt); ti < 0 || &en.e.entries[ti] != en || en.idx != i {
				return fmt.Errorf("type %s: executor %s at %d (its type %d), index says %d", tt.name, en.e.id, i, ti, en.idx)
			}
		}
	}
	if armed != c.armed {
		return fmt.Errorf("armed %d, scan %d", c.armed, armed)
	}
	if c.cfg.MaxRetrying >= 0 && armed > c.cfg.MaxRetrying {
		return fmt.Errorf("armed %d over the cap %d", armed, c.cfg.MaxRetrying)
	}
	if unarmed > 0 && (c.cfg.MaxRetrying < 0 || armed < c.cfg.MaxRetrying) {
		return fmt.Errorf("%d retrying tasks wait though only %d of %d are armed", unarmed, armed, c.cfg.MaxRetrying)
	}
	for k, id := range c.keys {
		if t := c.tasks.get(id); t == nil || t.key() != k {
			return fmt.Errorf("key %q maps to %d, which is %+v", k, id, t)
		}
	}
	return checkDependents(c)
}

// checkDependents checks c.dependents against the waiting tasks: every
// waiting task is listed once under each dependency that has not ended,
// each list's stale count is exact and at most half of it, and no list is
// kept empty or for a task that ended.
func checkDependents(c *Core) error {
	var err error
	n := 0
	c.dependents.each(func(d uint64, ids []uint64, countedStale int) {
		n++
		if err != nil {
			return
		}
		dt := c.tasks.get(d)
		if dt == nil || dt.state.Terminal() {
			err = fmt.Errorf("dependents of %d kept though it is %+v", d, dt)
			return
		}
		stale := 0
		for _, id := range ids {
			if !c.isWaiting(id) {
				stale++
			} else if !slices.Contains(depsOf(c.tasks.get(id)), d) {
				err = fmt.Errorf("task %d listed as a dependent of %d, which it does not depend on", id, d)
				return
			}
		}
		if stale != countedStale || len(ids) == 0 || 2*stale > len(ids) {
			err = fmt.Errorf("dependents of %d: %d entries, %d stale, counted %d", d, len(ids), stale, countedStale)
		}
	})
	if err != nil {
		return err
	}
	if n != c.dependents.len() {
		return fmt.Errorf("%d tasks with dependents, counted %d", n, c.dependents.len())
	}
	for bn, b := range c.dependents.blocks {
		if used := chunkSize - countOf(b.heads[:], 0); used != b.used || used == 0 {
			return fmt.Errorf("dependents block %d: %d heads used, counted %d", bn, used, b.used)
		}
	}
	lists := 0
	for _, b := range c.dependents.blocks {
		for _, h := range b.heads {
			if h&listHead != 0 {
				lists++
			}
		}
	}
	if inUse := len(c.dependents.lists) - len(c.dependents.free); lists != inUse {
		return fmt.Errorf("%d lists of dependents in use, %d not free", lists, inUse)
	}
	c.tasks.scan(0, Waiting, func(t *task) bool {
		for d := range t.deps().all() {
			if dt := c.tasks.get(d); dt == nil || dt.state.Terminal() {
				continue
			}
			if n := countOf(c.dependents.of(d), t.id); n != 1 {
				err = fmt.Errorf("waiting task %d listed %d times under its dependency %d", t.id, n, d)
				return false
			}
		}
		return true
	})
	return err
}

func countOf(ids []uint64, id uint64) int {
	n := 0
	for _, x := range ids {
		if x == id {
			n++
		}
	}
	return n
}
