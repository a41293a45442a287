package core

import (
	"log/slog"
	"strconv"
	"strings"

	"github.com/apollo11/apollo11/wire"
)

// Bulk admin requests (protocol section 8.4). requeue_where, cancel_where
// and purge_where act on the tasks a filter matches, in ascending id.

const (
	// maxFilterScan bounds the tasks one bulk request looks at, so that
	// one request cannot stall the event loop on a large table.
	maxFilterScan = 100_000
	// maxFilterLimit bounds the tasks one bulk request changes.
	maxFilterLimit = 1000
)

// taskFilter is a parsed filter.
type taskFilter struct {
	states      [NumStates + 1]bool
	typ         string
	errSub      string
	hasType     bool
	endedBefore int64 // 0: none
	endedAfter  int64 // 0: none
	after       uint64
	limit       int
	dryRun      bool
}

// bulkOp describes one bulk request: the states it acts on and whether
// ended_before and ended_after apply.
type bulkOp struct {
	name   string
	states []State
	ended  bool
}

var (
	opRequeueWhere = bulkOp{OpRequeueWhere, []State{Failed, Cancelled}, true}
	opCancelWhere  = bulkOp{OpCancelWhere, []State{Waiting, Pending, Dispatched, Running, Retrying}, false}
	opPurgeWhere   = bulkOp{OpPurgeWhere, []State{Succeeded, Failed, Cancelled}, true}
)

// parseFilter reads a bulk request's filter for op.
func parseFilter(m *wire.Message, op bulkOp) (taskFilter, error) {
	var f taskFilter
	named := false
	if v, ok := m.Get("task_type"); ok {
		if v == "" {
			return f, &wire.ValueError{Key: "task_type", Reason: "empty"}
		}
		f.typ, f.hasType, named = v, true, true
	}
	if _, ok := m.Get("state"); ok {
		names, err := m.List("state")
		if err != nil {
			return f, err
		}
		for _, n := range names {
			s, ok := ParseState(n)
			if !ok || !containsState(op.states, s) {
				return f, &wire.ValueError{Key: "state", Reason: op.name + " acts on " + joinStates(op.states) + ", not " + strconv.Quote(clipText(n))}
			}
			f.states[s] = true
		}
		named = true // state= (empty) is every state op acts on, on purpose
	}
	if len(m.Value("state")) == 0 {
		for _, s := range op.states {
			f.states[s] = true
		}
	}
	if v, ok := m.Get("error"); ok {
		if v == "" {
			return f, &wire.ValueError{Key: "error", Reason: "empty"}
		}
		f.errSub, named = v, true
	}
	for _, k := range []string{"ended_before", "ended_after"} {
		if !m.Has(k) {
			continue
		}
		if !op.ended {
			return f, &wire.ValueError{Key: k, Reason: op.name + " acts on tasks not yet ended"}
		}
		v, err := m.Uint(k)
		if err != nil {
			return f, err
		}
		if v == 0 || v > 1<<62 {
			return f, &wire.ValueError{Key: k, Reason: "must be Unix time in ms, 1 to 2^62"}
		}
		if k == "ended_before" {
			f.endedBefore = int64(v)
		} else {
			f.endedAfter = int64(v)
		}
		named = true
	}
	if !named {
		return f, &wire.ValueError{Key: "state", Reason: "name at least one of task_type, state, error, ended_before, ended_after"}
	}
	var err error
	if f.after, err = m.UintOr("after", 0); err != nil {
		return f, err
	}
	limit, err := m.UintOr("limit", maxFilterLimit)
	if err != nil {
		return f, err
	}
	if limit < 1 || limit > maxFilterLimit {
		return f, &wire.ValueError{Key: "limit", Reason: "must be 1 to " + strconv.Itoa(maxFilterLimit)}
	}
	f.limit = int(limit)
	if f.dryRun, err = m.BoolOr("dry_run", false); err != nil {
		return f, err
	}
	// Values borrow from the read buffer. The scan keeps none, but be safe.
	f.typ, f.errSub = strings.Clone(f.typ), strings.Clone(f.errSub)
	return f, nil
}

func containsState(list []State, s State) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func joinStates(list []State) string {
	names := make([]string, len(list))
	for i, s := range list {
		names[i] = s.String()
	}
	return strings.Join(names, ",")
}

// matches reports whether t meets every key of f.
func (f *taskFilter) matches(t *task) bool {
	if !f.states[t.state] || f.hasType && t.typ.name != f.typ {
		return false
	}
	if f.errSub != "" && !strings.Contains(t.errText(), f.errSub) {
		return false
	}
	if f.endedBefore != 0 && t.updatedMs >= f.endedBefore {
		return false
	}
	if f.endedAfter != 0 && t.updatedMs < f.endedAfter {
		return false
	}
	return true
}

// scanFilter returns the ids f matches, ascending, at most f.limit. next is
// the last id looked at when the scan stopped before the end, else 0.
func (c *Core) scanFilter(f *taskFilter) (ids []uint64, next uint64) {
	only := State(0)
	n := 0
	for s := range f.states {
		if f.states[s] {
			only, n = State(s), n+1
		}
	}
	if n != 1 {
		only = 0 // several states: the whole table, in id order
	}
	looked := 0
	c.tasks.scan(f.after, only, func(t *task) bool {
		looked++
		if f.matches(t) {
			ids = append(ids, t.id)
		}
		if len(ids) >= f.limit || looked >= maxFilterScan {
			next = t.id
			return false
		}
		return true
	})
	return ids, next
}

// bulkRequest runs one bulk request. act changes one task, or checks it on
// a dry run, and reports whether it did. flush, when not nil, runs after
// the last act and before the reply. The reply waits for its records.
func (c *Core) bulkRequest(p *peer, m *wire.Message, req string, op bulkOp,
	act func(t *task, f *taskFilter) bool, flush func()) {
	if !c.requireAdmin(p, m, req) {
		return
	}
	f, err := parseFilter(m, op)
	if err != nil {
		c.badRequest(p, req, err)
		return
	}
	if !f.dryRun && !c.writable(p, req) {
		return
	}
	ids, next := c.scanFilter(&f)
	count, skipped := 0, 0
	for _, id := range ids {
		t := c.tasks.get(id)
		if t == nil || !f.matches(t) {
			continue // changed by an earlier one of this request (a cascade)
		}
		if act(t, &f) {
			count++
		} else {
			skipped++
		}
	}
	if flush != nil {
		flush()
	}
	if !f.dryRun {
		c.obs.Admin(op.name, count)
	} else {
		c.obs.Admin(op.name, 0)
	}
	c.log.Info("admin "+op.name, append(c.askedBy(p), slog.Int("count", count), slog.Int("skipped", skipped),
		slog.Bool("dry_run", f.dryRun), slog.String("task_type", f.typ), slog.String("error", clipText(f.errSub)),
		slog.Uint64("after", f.after), slog.Uint64("next", next))...)
	b := c.begin(wire.KindMatched, req)
	b.UintK(kCount, uint64(count))
	if skipped > 0 {
		b.UintK(kSkipped, uint64(skipped))
	}
	if next != 0 {
		b.UintK(kNext, next)
	}
	if f.dryRun {
		b.BoolK(kDryRun, true)
		c.send(p.id, &b)
		return
	}
	c.confirm(p.id, &b)
}

// requeueWhere handles `requeue_where`.
func (c *Core) requeueWhere(p *peer, m *wire.Message, req string) {
	w, err := parseRequeue(m)
	if err != nil {
		if c.requireAdmin(p, m, req) {
			c.badRequest(p, req, err)
		}
		return
	}
	var plan requeuePlan
	c.bulkRequest(p, m, req, opRequeueWhere, func(t *task, f *taskFilter) bool {
		if f.dryRun {
			return c.planRequeue(&plan, t, w)
		}
		to, code, _ := c.requeueTarget(t, w, nil)
		return code == "" && c.requeueTask(t, to, w)
	}, nil)
}

// cancelWhere handles `cancel_where`.
func (c *Core) cancelWhere(p *peer, m *wire.Message, req string) {
	c.bulkRequest(p, m, req, opCancelWhere, func(t *task, f *taskFilter) bool {
		return f.dryRun || c.cancelTask(t, "cancelled by cancel_where")
	}, nil)
}

// purgeWhere handles `purge_where`. Matched ended tasks are dropped as
// retention drops them, in records of at most maxDropPerRecord ids.
func (c *Core) purgeWhere(p *peer, m *wire.Message, req string) {
	var drop []uint64
	c.bulkRequest(p, m, req, opPurgeWhere, func(t *task, f *taskFilter) bool {
		if !f.dryRun {
			drop = append(drop, t.id)
		}
		return true
	}, func() {
		for len(drop) > 0 {
			n := min(len(drop), maxDropPerRecord)
			r := c.newRecord(recDrop)
			r.at = c.now()
			r.ids = append(r.ids, drop[:n]...)
			c.commit(r)
			drop = drop[n:]
		}
	})
}
