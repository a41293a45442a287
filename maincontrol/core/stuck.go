// stuck.go flags running tasks past their type's limit. They may be taken
// back, as the type's policy says.

package core

import (
	"cmp"
	"slices"
	"strconv"
	"time"
)

const (
	// runWindowSize is how many recent run times a type keeps for its p99.
	runWindowSize = 128
	// runWindowMin is the run times a type needs before its p99 counts.
	runWindowMin = 20
	// maxRunWindows bounds the types whose run times are kept.
	maxRunWindows = MaxPolicyTypes
	// stuckFloorMs is the least a p99 rule waits. A type whose tasks take a
	// few ms would otherwise flag every scheduling hiccup.
	stuckFloorMs = 1000
	// stuckSweepMs is how often running tasks are checked.
	stuckSweepMs = 1000
)

// runWindow holds a type's latest run times of succeeded tasks, in ms.
type runWindow struct {
	ms    [runWindowSize]int64
	n     int // samples held, at most runWindowSize
	next  int // where the next sample goes
	p99   int64
	fresh bool // p99 matches the samples
}

func (w *runWindow) add(ms int64) {
	w.ms[w.next] = ms
	w.next = (w.next + 1) % runWindowSize
	w.n = min(w.n+1, runWindowSize)
	w.fresh = false
}

// p99Ms returns the 99th percentile of the samples (nearest rank).
func (w *runWindow) p99Ms() int64 {
	if !w.fresh {
		s := slices.Clone(w.ms[:w.n])
		slices.Sort(s)
		rank := (99*w.n + 99) / 100 // ceil(0.99 n)
		w.p99, w.fresh = s[rank-1], true
	}
	return w.p99
}

// stuckState is what the stuck rules keep between sweeps.
type stuckState struct {
	runs      map[string]*runWindow
	flagged   map[uint64]stuckMark // running tasks found stuck, by id
	nextSweep int64
	total     uint64 // tasks ever flagged
	taken     uint64 // stuck tasks taken back by their stuck_action
	warnedCap bool
}

type stuckMark struct {
	ver   uint64
	acted bool // its stuck_action is done (or none)
}

// noteRun keeps a succeeded task's run time for its type's p99 rule.
func (c *Core) noteRun(t *task, now int64) {
	ps := c.pol
	if ps == nil || !ps.anyStuck || t.state != Running {
		return
	}
	tp := ps.lookup(t.typ.name)
	if tp == nil || tp.StuckFactor == 0 {
		return
	}
	st := &ps.stuck
	w := st.runs[t.typ.name]
	if w == nil {
		if st.runs == nil {
			st.runs = make(map[string]*runWindow)
		}
		if len(st.runs) >= maxRunWindows {
			for name := range st.runs { // forget the types no longer known
				if c.types[name] == nil {
					delete(st.runs, name)
				}
			}
		}
		if len(st.runs) >= maxRunWindows {
			if !st.warnedCap {
				st.warnedCap = true
				c.log.Warn("stuck_factor: run times are kept for at most "+strconv.Itoa(maxRunWindows)+
					" task types; more types get no p99 rule", "task_type", t.typ.name)
			}
			return
		}
		w = new(runWindow)
		st.runs[t.typ.name] = w
	}
	w.add(max(0, now-t.updatedMs))
}

// stuckLimit is how long a task of this type may run before it is stuck,
// in ms, and the rule that set it. 0 means no rule applies yet.
func (c *Core) stuckLimit(tp *typePolicy, name string) (int64, string) {
	var limit int64
	rule := ""
	if tp.StuckAfter > 0 {
		limit, rule = tp.StuckAfter.Milliseconds(), "stuck_after"
	}
	if tp.StuckFactor > 0 {
		if w := c.pol.stuck.runs[name]; w != nil && w.n >= runWindowMin {
			p := max(int64(float64(w.p99Ms())*tp.StuckFactor), stuckFloorMs)
			if limit == 0 || p < limit {
				limit = p
				rule = strconv.FormatFloat(tp.StuckFactor, 'g', -1, 64) + " x p99 " +
					(time.Duration(w.p99Ms()) * time.Millisecond).String()
			}
		}
	}
	return limit, rule
}

// sweepStuck flags the running tasks past their type's limit, at most
// once a second. It warns once per dispatch, then takes the type's
// stuck_action.
func (c *Core) sweepStuck(now int64) {
	ps := c.pol
	if !ps.anyStuck {
		return
	}
	st := &ps.stuck
	if now < st.nextSweep {
		return
	}
	st.nextSweep = now + stuckSweepMs
	c.pruneStuck()
	if c.counts[Running] == 0 {
		return
	}
	type found struct {
		id, ver      uint64
		ranMs, limit int64
		rule         string
		action       StuckAction
	}
	var due []found
	for _, e := range c.execs {
		for id, a := range e.tasks.all() {
			t := c.tasks.get(id)
			if t == nil || t.state != Running || t.version != a.ver || a.restored {
				continue // restored ones are judged once their executor lists them
			}
			if m, ok := st.flagged[id]; ok && m.ver == t.version && m.acted {
				continue
			}
			tp := ps.lookup(t.typ.name)
			if tp == nil || !tp.stuckRule() {
				continue
			}
			limit, rule := c.stuckLimit(tp, t.typ.name)
			if ran := now - t.updatedMs; limit > 0 && ran >= limit {
				due = append(due, found{id, t.version, ran, limit, rule, tp.StuckAction})
			}
		}
	}
	slices.SortFunc(due, func(a, b found) int { return cmp.Compare(a.id, b.id) })
	for _, f := range due {
		c.flagStuck(f.id, f.ver, f.ranMs, f.limit, f.rule, f.action)
	}
}

// flagStuck warns about a stuck task once per dispatch and applies the
// stuck_action, through the same transitions as a task timeout.
func (c *Core) flagStuck(id, ver uint64, ranMs, limit int64, rule string, action StuckAction) {
	st := &c.pol.stuck
	if st.flagged == nil {
		st.flagged = make(map[uint64]stuckMark)
	}
	t := c.tasks.get(id)
	m, seen := st.flagged[id]
	if !seen || m.ver != ver {
		st.total++
		c.log.Warn("task stuck: running past its type's limit", "task_id", id, "version", ver,
			"task_type", t.typ.name, "executor", t.execID, "running", time.Duration(ranMs)*time.Millisecond,
			"limit", time.Duration(limit)*time.Millisecond, "rule", rule, "action", action.String())
		m = stuckMark{ver: ver}
	}
	if action == StuckNone {
		m.acted = true
		st.flagged[id] = m
		return
	}
	st.flagged[id] = m
	if !c.available {
		return // tried again at the next sweep
	}
	m.acted = true
	st.flagged[id] = m
	st.taken++
	e := c.execs[t.execID]
	c.sendCancel(e, id, ver)
	why := "stuck: running " + (time.Duration(ranMs) * time.Millisecond).String() + ", past " + rule + " " +
		(time.Duration(limit) * time.Millisecond).String()
	if action == StuckFail {
		c.endWith(id, Failed, why, "", 0, nil, 0, flagTakenBack, "stuck")
		return
	}
	c.failAttempt(id, true, true, true, why, "", 0, "stuck")
}

// pruneStuck forgets the flagged tasks that no longer run that dispatch.
// A reload may drop a type's rule while a flagged task still runs. Its
// flag stays, so it warns no more.
func (c *Core) pruneStuck() {
	st := &c.pol.stuck
	for id, m := range st.flagged {
		if !c.stillStuck(id, m.ver) {
			delete(st.flagged, id)
		}
	}
}

// stillStuck reports whether task id still runs the flagged dispatch.
func (c *Core) stillStuck(id, ver uint64) bool {
	t := c.tasks.get(id)
	return t != nil && t.version == ver && t.state == Running
}

// countStuck counts the flagged tasks still running whose type still
// has a stuck rule. It only reads, and the sweep prunes.
func (c *Core) countStuck() int {
	n := 0
	for id, m := range c.pol.stuck.flagged {
		if !c.stillStuck(id, m.ver) {
			continue
		}
		if tp := c.pol.lookup(c.tasks.get(id).typ.name); tp != nil && tp.stuckRule() {
			n++
		}
	}
	return n
}

// StuckStats is what the stuck rules found.
type StuckStats struct {
	Stuck     int    // running tasks flagged stuck now
	Flagged   uint64 // tasks flagged since start
	TakenBack uint64 // stuck tasks taken back by their stuck_action
}

// Stuck returns the stuck tasks' counts.
func (c *Core) Stuck() StuckStats {
	if c.pol == nil {
		return StuckStats{}
	}
	n := c.countStuck()
	st := &c.pol.stuck
	return StuckStats{Stuck: n, Flagged: st.total, TakenBack: st.taken}
}
