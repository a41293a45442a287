package core

import (
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"

	"github.com/apollo11/apollo11/wire"
)

// execTypes answers an executor's types message (protocol section 8.7).
// It adds and drops task types without a new register. Dropped types'
// dispatches stay with the executor. Only its free slots leave them.
func (c *Core) execTypes(p *peer, m *wire.Message) {
	req, ok := c.reqOf(p, m)
	if !ok {
		return
	}
	add, err := m.List("add")
	if err != nil {
		c.badRequest(p, req, err)
		return
	}
	drop, err := m.List("drop")
	if err != nil {
		c.badRequest(p, req, err)
		return
	}
	if len(add) > wire.MaxExecutorTypes && distinct(add) > wire.MaxExecutorTypes {
		c.badRequest(p, req, &wire.ValueError{Key: "add", Reason: "more than " + strconv.Itoa(wire.MaxExecutorTypes) + " types"})
		return
	}
	dropSet := make(map[string]struct{}, len(drop))
	for _, t := range drop {
		dropSet[t] = struct{}{}
	}
	for _, t := range add {
		if _, both := dropSet[t]; both {
			c.badRequest(p, req, &wire.ValueError{Key: "drop", Reason: "type " + quoted(t) + " is also in add"})
			return
		}
	}
	descs, ok := c.parseDescs(p, req, m, add)
	if !ok {
		return
	}
	e := p.exec
	next := make([]string, 0, len(e.types)+len(add))
	have := make(map[string]struct{}, len(e.types)+len(add))
	for _, tt := range e.types {
		if _, gone := dropSet[tt.name]; !gone {
			next = append(next, tt.name)
			have[tt.name] = struct{}{}
		}
	}
	added := 0
	for _, t := range add {
		if _, dup := have[t]; !dup {
			have[t] = struct{}{}
			next = append(next, strings.Clone(t))
			added++
		}
	}
	if len(next) > wire.MaxExecutorTypes {
		c.badRequest(p, req, &wire.ValueError{Key: "add", Reason: "the executor would take " + strconv.Itoa(len(next)) +
			" types, more than " + strconv.Itoa(wire.MaxExecutorTypes)})
		return
	}
	dropped := len(e.types) - (len(next) - added)
	if added == 0 && dropped == 0 {
		c.keepDescs(e, descs, false, drop)
		c.replyTypes(p, req, e, false)
		return
	}
	if !c.writable(p, req) || !c.regRoom(p, req, "types", e.id, next) {
		return
	}
	r := c.newRecord(recExecTypes)
	r.exec = e.id
	for _, t := range next {
		if tt := c.types[t]; tt != nil {
			r.types = append(r.types, tt.name)
		} else {
			r.types = append(r.types, t)
		}
	}
	if !c.commit(r) {
		return
	}
	c.keepDescs(e, descs, false, drop)
	c.ops.TypeChanges++
	c.logLimited(slog.LevelInfo, "executor changed its task types", "executor", e.id, "add", clipTypes(slices.Clone(add)),
		"drop", clipTypes(slices.Clone(drop)), "task_types", len(e.types), "tasks", e.tasks.len())
	c.replyTypes(p, req, e, true)
}

func (c *Core) replyTypes(p *peer, req string, e *executor, changed bool) {
	b := c.begin(wire.KindTypesOK, req)
	b.Uint("task_types", uint64(len(e.types)))
	if changed {
		c.confirm(p.id, &b)
		return
	}
	c.send(p.id, &b)
}

// applyExecTypes gives a registered executor a new set of task types. Its
// slots and its place in the registration order stay.
func (c *Core) applyExecTypes(r *record) {
	e := c.execs[r.exec]
	seq, eseq := c.regSeq, e.regSeq
	reg := *r
	reg.kind, reg.slots = recExecReg, uint64(e.slots)
	c.applyExecReg(&reg)
	c.regSeq, e.regSeq = seq, eseq
}

// checkOps validates the records of the operator's changes.
func (c *Core) checkOps(r *record) error {
	switch r.kind {
	case recStateFix:
		if !validStateName(r.key) {
			return fmt.Errorf("%w: state change of key %q", ErrCorrupt, r.key)
		}
	case recPause:
		if r.typ == "" {
			return fmt.Errorf("%w: pause of an empty task type", ErrCorrupt)
		}
	case recExecTypes:
		if c.execs[r.exec] == nil {
			return fmt.Errorf("%w: task types of unknown executor %q", ErrCorrupt, r.exec)
		}
	}
	return nil
}
