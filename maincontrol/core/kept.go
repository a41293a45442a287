package core

import (
	"log/slog"
	"strconv"

	"github.com/apollo11/apollo11/wire"
)

// Bounds of what registrations make the core hold. An executor that
// disconnects is kept until its heartbeat timeout (it may come back and
// carry on), and every registration is durable, written whole by every
// snapshot. A peer registering fresh ids with 1,024 types each and
// leaving held 400 MB within seconds and wrote snapshots of 18 MB.
const (
	// maxKeptExecutors caps the disconnected executors kept; past it the
	// one disconnected longest is forgotten, as at its timeout.
	maxKeptExecutors = 4096
	// maxRegBytes caps the registrations of all known executors, counted
	// as regBytes: past it the oldest disconnected are forgotten, and if
	// that is not enough a register gets unavailable.
	maxRegBytes = 8 << 20
	// maxTaskTypes caps the distinct task type names known, by tasks and
	// registrations together: past it a register naming a new one gets
	// unavailable (after forgetting disconnected executors), and a submit
	// of a new one queue_full.
	maxTaskTypes = 16_384
)

// regBytes is what a registration counts against maxRegBytes: about what
// it costs in memory and in a snapshot.
func regBytes(id string, names func(yield func(string) bool)) int {
	n := len(id) + 64
	for name := range names {
		n += len(name) + 16
	}
	return n
}

// keptRef is a disconnected executor in the order of disconnection; gen
// tells a stale entry (it came back, or left again) from a current one.
type keptRef struct {
	e   *executor
	gen uint64
}

// keepDisconnected queues e, just disconnected, to be forgotten first
// when too many are kept.
func (c *Core) keepDisconnected(e *executor) {
	e.keptGen++
	c.kept = append(c.kept, keptRef{e, e.keptGen})
	for len(c.execs)-c.liveExecs > maxKeptExecutors && c.forgetOldestKept("") {
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

func (c *Core) isKept(k keptRef) bool {
	return c.execs[k.e.id] == k.e && !k.e.connected() && k.e.keptGen == k.gen
}

// forgetOldestKept forgets the executor disconnected longest, unless it is
// the one named spare, and reports whether it forgot one.
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

// forgetExecutor forgets a disconnected executor before its timeout, as
// its timeout would: its dispatched tasks go back to pending, its running
// ones are retried.
func (c *Core) forgetExecutor(e *executor) {
	c.logLimited(slog.LevelWarn, "disconnected executor forgotten before its timeout: too many kept", "executor", e.id,
		"tasks", e.tasks.len())
	c.takeBackAll(e, false, "executor "+e.id+" forgotten: too many disconnected executors")
	r := c.newRecord(recExecGone)
	r.exec, r.why = e.id, "forgotten"
	c.commit(r)
}

// regRoom reports whether a register of id with these types fits the
// bounds above, forgetting the executors disconnected longest to make
// room, and answers the register with unavailable when it does not.
func (c *Core) regRoom(p *peer, id string, types []string) bool {
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
		}
		return c.regBytes-old+need > maxRegBytes || len(c.types)+newNames > maxTaskTypes
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
	c.sendError(p, "", wire.CodeUnavailable, "register refused: the executors known hold "+strconv.Itoa(c.regBytes)+
		" bytes of registrations (at most "+strconv.Itoa(maxRegBytes)+") and "+strconv.Itoa(len(c.types))+
		" task types are known (at most "+strconv.Itoa(maxTaskTypes)+"); register fewer types, or retry later")
	return false
}
