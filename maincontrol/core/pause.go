package core

import (
	"strconv"
	"strings"

	"github.com/apollo11/apollo11/wire"
)

// maxPausedTypes bounds the paused types. The set is durable, and every
// snapshot writes it whole.
const maxPausedTypes = 1024

// maxPausedNameLen bounds a paused name. So the whole set stays within
// 1 MiB of every snapshot.
const maxPausedNameLen = 1024

// pauseRequest answers pause and resume (protocol section 8.5).
func (c *Core) pauseRequest(p *peer, m *wire.Message, req string, pause bool) {
	if !c.requireAdmin(p, m, req) {
		return
	}
	name, err := requiredText(m, "task_type")
	if err != nil {
		c.badRequest(p, req, err)
		return
	}
	reply := wire.KindResumed
	if pause {
		reply = wire.KindPaused
	}
	if _, is := c.paused[name]; is == pause {
		b := c.begin(reply, req)
		b.StrK(kTaskType, name)
		b.Bool("changed", false)
		c.send(p.id, &b)
		return
	}
	if pause && len(name) > maxPausedNameLen {
		// resume takes any length, as a longer name is not paused.
		c.badRequest(p, req, &wire.ValueError{Key: "task_type", Reason: "longer than " +
			strconv.Itoa(maxPausedNameLen) + " bytes, the most a paused type may have"})
		return
	}
	if pause && len(c.paused) >= maxPausedTypes {
		c.badRequest(p, req, &wire.ValueError{Key: "task_type", Reason: strconv.Itoa(len(c.paused)) +
			" types are paused, the most there may be; resume one first"})
		return
	}
	if !c.writable(p, req) {
		return
	}
	r := c.newRecord(recPause)
	r.typ, r.on = strings.Clone(name), pause
	if !c.commit(r) {
		return
	}
	if pause {
		c.ops.Pauses++
		c.log.Info("task type paused", append(c.askedBy(p), "task_type", name, "pending", c.typeCount(name, Pending))...)
	} else {
		c.ops.Resumes++
		c.log.Info("task type resumed", append(c.askedBy(p), "task_type", name, "pending", c.typeCount(name, Pending))...)
	}
	b := c.begin(reply, req)
	b.StrK(kTaskType, name)
	b.Bool("changed", true)
	c.confirm(p.id, &b)
}

// typeCount is how many tasks of the named type are in state s.
func (c *Core) typeCount(name string, s State) int {
	if tt := c.types[name]; tt != nil {
		return int(tt.counts[s])
	}
	return 0
}

// applyPause pauses or resumes a type. A resumed type is marked dirty so
// that its pending tasks are dispatched at once.
func (c *Core) applyPause(name string, pause bool) {
	if pause {
		c.paused[name] = struct{}{}
	} else {
		delete(c.paused, name)
	}
	if tt := c.types[name]; tt != nil {
		tt.paused = pause
		if !pause {
			c.markDirty(tt)
		}
	}
}

// PausedTypes returns the paused task types, for stats and metrics.
func (c *Core) PausedTypes() int { return len(c.paused) }
