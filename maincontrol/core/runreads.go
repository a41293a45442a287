package core

import (
	"slices"
	"strconv"

	"github.com/apollo11/apollo11/wire"
)

// requestedRun returns the run a request names with run_id (or, when
// byKey, key), or answers bad_request or unknown_run and returns nil.
func (c *Core) requestedRun(p *peer, m *wire.Message, req string, byKey bool) *run {
	key, hasKey := m.Get("key")
	_, hasID := m.Get("run_id")
	if byKey && hasKey {
		if hasID {
			c.badRequest(p, req, &wire.ValueError{Key: "run_id", Reason: "give run_id or key, not both"})
			return nil
		}
		r := c.runs.byID[c.runs.byKey[key]]
		if r == nil {
			c.sendError(p, req, wire.CodeUnknownRun, "no run with key "+quoted(key))
		}
		return r
	}
	id, err := m.Uint("run_id")
	if err != nil {
		c.badRequest(p, req, err)
		return nil
	}
	r := c.runs.byID[id]
	if r == nil {
		c.sendError(p, req, wire.CodeUnknownRun, "unknown run "+strconv.FormatUint(id, 10))
	}
	return r
}

// runQuery answers `run_query run_id=<n>|key=<k> [step=<id>]`.
func (c *Core) runQuery(p *peer, m *wire.Message, req string) {
	r := c.requestedRun(p, m, req, true)
	if r == nil {
		return
	}
	if step, ok := m.Get("step"); ok {
		c.runStepReply(p, req, r, step)
		return
	}
	b := c.begin(wire.KindRunState, req)
	b.Uint("run_id", r.id)
	b.Str("name", r.name)
	if r.key != "" {
		b.Str("key", r.key)
	}
	b.StrK(kState, r.state.String())
	b.Uint("steps", uint64(len(r.steps)))
	b.IntK(kCreatedMs, r.createdMs)
	b.IntK(kUpdatedMs, r.updatedMs)
	b.Uint("resumes", r.resumes)
	if r.trace != "" {
		b.StrK(kTraceID, r.trace)
	}
	for i := range r.steps {
		s := &r.steps[i]
		pre := "step." + strconv.Itoa(i) + "."
		b.Str(pre+"id", s.id)
		b.Uint(pre+"task_id", r.first+uint64(i))
		if t := c.tasks.get(r.first + uint64(i)); t != nil {
			b.Str(pre+"state", t.state.String())
			if e := t.errText(); e != "" {
				b.Str(pre+"error", clipError(e))
			}
		}
		if s.optional {
			b.Bool(pre+"optional", true)
		}
		if s.whenFail {
			b.Str(pre+"when", "failed")
		}
		switch {
		case s.compTask != 0:
			b.Uint(pre+"comp_task_id", s.compTask)
			if t := c.tasks.get(s.compTask); t != nil {
				b.Str(pre+"comp_state", t.state.String())
				if e := t.errText(); e != "" {
					b.Str(pre+"comp_error", clipError(e))
				}
			}
		case s.compErr != "":
			b.Str(pre+"comp_state", Failed.String())
			b.Str(pre+"comp_error", clipError(s.compErr))
		}
	}
	c.send(p.id, &b)
}

// runStepReply answers run_query for one step: its task and its args.
func (c *Core) runStepReply(p *peer, req string, r *run, step string) {
	i := r.stepIndex(step)
	if i < 0 {
		c.badRequest(p, req, &wire.ValueError{Key: "step", Reason: "run " + strconv.FormatUint(r.id, 10) + " has no step " + quoted(step)})
		return
	}
	b := c.begin(wire.KindRunStep, req)
	b.Uint("run_id", r.id)
	b.Str("step", r.steps[i].id)
	b.UintK(kTaskID, r.first+uint64(i))
	if t := c.tasks.get(r.first + uint64(i)); t != nil {
		b.StrK(kState, t.state.String())
		if e := t.errText(); e != "" {
			b.StrK(kError, clipError(e))
		}
		b.RawString(t.args, int(t.argKeys))
	}
	c.send(p.id, &b)
}

// runList answers `run_list [state=<list>] [limit] [after]`.
func (c *Core) runList(p *peer, m *wire.Message, req string) {
	var want [len(runStateNames)]bool
	all := true
	if v, ok := m.Get("state"); ok && v != "" {
		all = false
		var bad string
		ok := wire.ForEachItem(v, func(item string) bool {
			s, known := parseRunState(item)
			if !known {
				bad = item
				return false
			}
			want[s] = true
			return true
		})
		if !ok || bad != "" {
			c.badRequest(p, req, &wire.ValueError{Key: "state", Reason: "not a list of run states: " + quoted(v)})
			return
		}
	}
	limit, after, err := pageArgs(m)
	if err != nil {
		c.badRequest(p, req, err)
		return
	}
	room := c.cfg.MaxFrame - (len("type=runs\nreq=") + wire.EscapedLen(req) +
		len("\ncount=") + 20 + len("\nids=") + len("\nnext=") + 20)
	start, _ := slices.BinarySearch(c.runs.order, after+1)
	var list []byte
	count, more := 0, false
	var last uint64
	for _, id := range c.runs.order[start:] {
		r := c.runs.byID[id]
		if !all && !want[r.state] {
			continue
		}
		w := len(strconv.FormatUint(id, 10)) + 1
		if uint64(count) == limit || len(list)+w > room {
			more = true
			break
		}
		if count > 0 {
			list = append(list, ',')
		}
		list = strconv.AppendUint(list, id, 10)
		count++
		last = id
	}
	b := c.begin(wire.KindRuns, req)
	b.UintK(kCount, uint64(count))
	b.StrK(kIDs, string(list))
	if more && count > 0 {
		b.UintK(kNext, last)
	}
	c.send(p.id, &b)
}

// runTaskKeys adds run_id, step and rollback_of to the task_state of a
// task of a run.
func (c *Core) runTaskKeys(b *wire.Builder, id uint64) {
	ref, ok := c.runs.of[id]
	if !ok {
		return
	}
	r := c.runs.byID[ref.run]
	// Only when they fit, as the durations: the output check of section 4
	// does not count them.
	n := len("\nrun_id=\nstep=\nrollback_of=") + 40 + len(r.steps[ref.step].id)
	if b.Len()+n > c.cfg.MaxFrame || b.Keys()+3 > wire.MaxKeys {
		return
	}
	b.Uint("run_id", r.id)
	b.Str("step", r.steps[ref.step].id)
	if ref.comp {
		b.Uint("rollback_of", r.first+uint64(ref.step))
	}
}
