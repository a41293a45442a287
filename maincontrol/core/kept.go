package core

import (
	"log/slog"
	"slices"
	"strconv"
	"strings"

	"github.com/apollo11/apollo11/wire"
)

// Bounds of what registrations make the core hold. A disconnected executor
// is kept until its heartbeat timeout, and snapshots write every registration.
const (
	// maxRegBytes caps the registrations of all known executors, counted
	// as regBytes. Past it the oldest idle disconnected are forgotten. If
	// that is not enough, a register gets unavailable.
	maxRegBytes = 8 << 20
)

// Config.MaxKeptExecutors caps the disconnected executors kept. Past it
// the idle one disconnected longest is forgotten. One holding tasks is
// never forgotten early. A register of a fresh id gets unavailable instead.
//
// Config.MaxTaskTypes caps the distinct task type names known, by tasks
// and registrations together. Past it a register naming a new one gets
// unavailable, after idle disconnected executors are forgotten. A submit
// of a new one gets queue_full.

// regBytes is what a registration counts against maxRegBytes. That is
// about what it costs in memory and in a snapshot.
func regBytes(id string, names func(yield func(string) bool)) int {
	n := len(id) + 64
	for name := range names {
		n += len(name) + 16
	}
	return n
}

// keptRef is a disconnected executor without tasks, in the order it
// became so. gen tells a stale entry from a current one. An entry is
// stale when its executor came back, left again, or was queued again.
type keptRef struct {
	e   *executor
	gen uint64
}

// keepDisconnected notes e just disconnected, and forgets the idle ones
// disconnected longest while too many are kept.
func (c *Core) keepDisconnected(e *executor) {
	e.keptGen++ // its older entries are stale
	c.queueIdle(e)
	for len(c.execs)-c.liveExecs > c.cfg.MaxKeptExecutors && c.forgetOldestKept("") {
	}
	if n := len(c.kept) - c.keptHead; n > 64 && n > 4*(len(c.execs)-c.liveExecs) {
		live := c.kept[:0]
		for _, k := range c.kept[c.keptHead:] {
			if c.isKept(k) {
				live = append(live, k)
			}
		}
		clear(c.kept[len(live):])
		c.kept, c.keptHead = live, 0
	}
}

// queueIdle queues e, disconnected, to be forgotten first once it holds
// no task. One holding tasks is queued when its last task leaves it.
func (c *Core) queueIdle(e *executor) {
	if e.connected() || e.tasks.len() != 0 || c.execs[e.id] != e {
		return
	}
	e.keptGen++
	c.kept = append(c.kept, keptRef{e, e.keptGen})
}

// queueIdleAll queues the executors recovery found without tasks,
// by id so that the order does not depend on map iteration.
func (c *Core) queueIdleAll() {
	c.kept, c.keptHead = c.kept[:0], 0
	var idle []*executor
	for _, e := range c.execs {
		if !e.connected() && e.tasks.len() == 0 {
			idle = append(idle, e)
		}
	}
	slices.SortFunc(idle, func(a, b *executor) int { return strings.Compare(a.id, b.id) })
	for _, e := range idle {
		c.queueIdle(e)
	}
}

func (c *Core) isKept(k keptRef) bool {
	return c.execs[k.e.id] == k.e && !k.e.connected() && k.e.keptGen == k.gen && k.e.tasks.len() == 0
}

// forgetOldestKept forgets the idle executor disconnected longest, unless
// it is the one named spare, and reports whether it forgot one.
func (c *Core) forgetOldestKept(spare string) bool {
	spared := false
	for c.keptHead < len(c.kept) {
		k := c.kept[c.keptHead]
		c.kept[c.keptHead] = keptRef{}
		c.keptHead++
		if !c.isKept(k) {
			continue
		}
		if k.e.id == spare {
			if spared {
				c.kept = append(c.kept, k)
				return false // only the spared one is left
			}
			spared = true
			c.kept = append(c.kept, k) // stays kept, now last
			continue
		}
		c.forgetExecutor(k.e)
		return true
	}
	c.kept, c.keptHead = c.kept[:0], 0
	return false
}

// forgetExecutor forgets a disconnected executor that holds no task
// before its timeout, as its timeout would.
func (c *Core) forgetExecutor(e *executor) {
	c.logLimited(slog.LevelWarn, "idle disconnected executor forgotten before its timeout: too many kept", "executor", e.id)
	r := c.newRecord(recExecGone)
	r.exec, r.why = e.id, "forgotten"
	c.commit(r)
}

// regRoom reports whether a register of id with these types fits the
// bounds above. It forgets the idle executors disconnected longest to
// make room. When it does not fit, the register gets unavailable.
func (c *Core) regRoom(p *peer, req, what, id string, types []string) bool {
	if c.execs[id] == nil {
		// A fresh id may disconnect later, so room for it is made now.
		for len(c.execs)-c.liveExecs >= c.cfg.MaxKeptExecutors && c.forgetOldestKept("") {
		}
		if n := len(c.execs) - c.liveExecs; n >= c.cfg.MaxKeptExecutors {
			c.sendError(p, req, wire.CodeUnavailable, what+" refused: "+strconv.Itoa(n)+
				" disconnected executors are kept (at most "+strconv.Itoa(c.cfg.MaxKeptExecutors)+", --max-kept-executors"+
				") and all hold tasks until their heartbeat timeout; retry later")
			return false
		}
	}
	seen := make(map[string]struct{}, min(len(types), wire.MaxExecutorTypes))
	newNames := 0
	for _, t := range types {
		if _, ok := seen[t]; ok {
			continue
		}
		seen[t] = struct{}{}
		if c.types[t] == nil {
			newNames++
		}
	}
	need := regBytes(id, func(yield func(string) bool) {
		for t := range seen {
			if !yield(t) {
				return
			}
		}
	})
	over := func() bool {
		old := 0
		if e := c.execs[id]; e != nil {
			old = e.regBytes
			if what == "register" {
				old += e.descBytes // a register replaces them
			}
		}
		return c.regBytes+c.descBytes-old+need > maxRegBytes || len(c.types)+newNames > c.cfg.MaxTaskTypes
	}
	for over() && c.forgetOldestKept(id) {
	}
	newNames = 0
	for t := range seen {
		if c.types[t] == nil {
			newNames++
		}
	}
	if !over() {
		return true
	}
	c.sendError(p, req, wire.CodeUnavailable, what+" refused: the executors known hold "+strconv.Itoa(c.regBytes)+
		" bytes of registrations (at most "+strconv.Itoa(maxRegBytes)+") and "+strconv.Itoa(len(c.types))+
		" task types are known (at most "+strconv.Itoa(c.cfg.MaxTaskTypes)+", --max-task-types); register fewer types, or retry later")
	return false
}
