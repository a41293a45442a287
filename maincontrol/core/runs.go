package core

import (
	"slices"
	"strconv"
	"strings"
)

// Runs (protocol section 8.10): a named graph of steps kept as one object.
// Each step is an ordinary task; the run follows their ends. The run's
// state is derived in apply from its tasks' ends, so live decisions and
// replay agree; what follows from a change (run_done, compensation) is
// decided live by settleRuns, after the input that caused it.

// runState is a run's state.
type runState uint8

const (
	runRunning runState = iota + 1
	runSucceeded
	runFailed
	runCancelled
	runCompensating
	runRolledBack
	runRollbackFailed
)

var runStateNames = [...]string{"", "running", "succeeded", "failed", "cancelled", "compensating",
	"rolled_back", "rollback_failed"}

func (s runState) String() string {
	if int(s) < len(runStateNames) && s != 0 {
		return runStateNames[s]
	}
	return "invalid"
}

// ended reports whether a run in s has ended: nothing of it runs.
func (s runState) ended() bool { return s != runRunning && s != runCompensating && s != 0 }

func parseRunState(name string) (runState, bool) {
	for i := 1; i < len(runStateNames); i++ {
		if runStateNames[i] == name {
			return runState(i), true
		}
	}
	return 0, false
}

// run is one run. A run may be shared with a frozen snapshot: change it
// only through Core.mutRun, which copies it first when it is.
type run struct {
	id        uint64
	name      string
	key       string
	trace     string
	createdMs int64
	updatedMs int64
	first     uint64 // task id of step 0; step i's task is first+i
	state     runState
	// compensating: its compensations have begun (the chain is made one
	// task at a time, each once the one before it ended).
	compensating bool
	resumes      uint64
	steps        []runStep
	bytes        int64  // what it counts toward the run byte cap (runBytes)
	live         int    // its tasks the task table still holds
	gen          uint64 // Core.runGen when made or copied
}

// runStep is a step: its template and what the run knows of its task.
type runStep struct {
	id       string
	typ      string
	args     []kv // the args as submitted; references not filled in
	refs     bool // args hold output references
	deps     []uint16
	priority uint8
	maxAtt   uint64
	timeout  uint64
	label    string
	optional bool
	whenFail bool
	// comp: the step has a compensation, of type compType (the step's
	// own when empty) with args compArgs.
	comp     bool
	compType string
	compArgs []kv
	// st is its task's state as last seen; skipped: it ended cancelled by
	// a when=failed rule, or by a skipped dependency.
	st      State
	skipped bool
	// compTask is its compensation's task (0: none made); compSt that
	// task's state as last seen; compErr the error of a compensation
	// that could not be made (a missing output), which then counts failed.
	compTask uint64
	compSt   State
	compErr  string
}

// runRef places a task in a run: the run, the step, and whether the task
// is the step's compensation.
type runRef struct {
	run  uint64
	step uint16
	comp bool
}

// runIndex is the core's runs and what finds them.
type runIndex struct {
	byID    map[uint64]*run
	order   []uint64 // ids, ascending; dropped ones removed
	byKey   map[string]uint64
	of      map[uint64]runRef // task id -> its run
	nextID  uint64
	gen     uint64 // bumped at each Freeze: runs of older gens are shared
	bytes   int64  // sum of run.bytes
	notEnd  int    // runs not ended
	notEndB int64  // bytes of the runs not ended
	// dirty lists runs whose state changed since settleRuns last ran;
	// retry those whose compensation waited for the log to be writable.
	dirty, retry []uint64
	// sweep: retention has work (a run ended, a task of a run was
	// forgotten, a run was made).
	sweep  bool
	loaded map[uint64]*run // a snapshot's runs by id, indexed once its tasks are in
	waits  runWaits
}

func (x *runIndex) init() {
	x.byID = map[uint64]*run{}
	x.byKey = map[string]uint64{}
	x.of = map[uint64]runRef{}
	x.loaded = map[uint64]*run{}
	x.nextID = 1
	x.waits.byRun = map[uint64][]runWaiter{}
}

// mutRun returns run id for writing, copying it first when a frozen
// snapshot may hold it.
func (c *Core) mutRun(id uint64) *run {
	r := c.runs.byID[id]
	if r == nil || r.gen == c.runs.gen {
		return r
	}
	cp := *r
	cp.steps = slices.Clone(r.steps)
	cp.gen = c.runs.gen
	c.runs.byID[id] = &cp
	return &cp
}

// addRun indexes a new run.
func (c *Core) addRun(r *run) {
	r.gen = c.runs.gen
	c.runs.byID[r.id] = r
	c.runs.order = append(c.runs.order, r.id)
	if r.key != "" {
		c.runs.byKey[r.key] = r.id
	}
	c.runs.nextID = max(c.runs.nextID, r.id+1)
	c.runs.bytes += r.bytes
	c.runs.sweep = true
	if !r.state.ended() {
		c.runs.notEnd++
		c.runs.notEndB += r.bytes
	}
	for i := range r.steps {
		s := &r.steps[i]
		if c.tasks.get(r.first+uint64(i)) != nil {
			c.runs.of[r.first+uint64(i)] = runRef{run: r.id, step: uint16(i)}
			r.live++
		}
		if s.compTask != 0 && c.tasks.get(s.compTask) != nil {
			c.runs.of[s.compTask] = runRef{run: r.id, step: uint16(i), comp: true}
			r.live++
		}
	}
}

// dropRun forgets a run; its tasks stay, as plain tasks.
func (c *Core) dropRun(id uint64) {
	r := c.runs.byID[id]
	if r == nil {
		return
	}
	for i := range r.steps {
		if ref, ok := c.runs.of[r.first+uint64(i)]; ok && ref.run == id {
			delete(c.runs.of, r.first+uint64(i))
		}
		if t := r.steps[i].compTask; t != 0 {
			delete(c.runs.of, t)
		}
	}
	if r.key != "" && c.runs.byKey[r.key] == id {
		delete(c.runs.byKey, r.key)
	}
	c.runs.bytes -= r.bytes
	if !r.state.ended() {
		c.runs.notEnd--
		c.runs.notEndB -= r.bytes
	}
	delete(c.runs.byID, id)
	if i, ok := slices.BinarySearch(c.runs.order, id); ok {
		c.runs.order = slices.Delete(c.runs.order, i, i+1)
	}
	c.dropRunWaits(id)
}

// runTaskChanged follows a task of a run that ended or was requeued: the
// step's view of it, then the run's state. It runs in apply.
func (c *Core) runTaskChanged(id uint64, at int64) {
	ref, ok := c.runs.of[id]
	if !ok {
		return
	}
	r := c.mutRun(ref.run)
	t := c.tasks.get(id)
	s := &r.steps[ref.step]
	if ref.comp {
		s.compSt = t.state
	} else {
		s.st = t.state
		s.skipped = t.state == Cancelled && c.skippedBy(r, t.errText())
	}
	c.deriveRunState(r, at)
	c.runs.dirty = append(c.runs.dirty, r.id) // a compensation ending may let the next one come
}

// skippedBy reports whether an end's error says a step was skipped: by
// its when=failed rule, or because a skipped step of r it depends on was.
func (c *Core) skippedBy(r *run, errText string) bool {
	if errText == errSkipped {
		return true
	}
	rest, ok := strings.CutPrefix(errText, "dependency ")
	if !ok {
		return false
	}
	idText, st, _ := strings.Cut(rest, " ")
	id, ok := parseUintText(idText)
	if !ok || st != Cancelled.String() || id < r.first || id-r.first >= uint64(len(r.steps)) {
		return false
	}
	return r.steps[id-r.first].skipped
}

func parseUintText(s string) (uint64, bool) {
	v, err := strconv.ParseUint(s, 10, 64)
	return v, err == nil
}

// excused reports whether a step that ended lets its run succeed.
func (s *runStep) excused() bool {
	switch {
	case s.st == Succeeded || s.skipped:
		return true
	case s.optional:
		return s.st == Failed || s.st == Cancelled
	}
	return false
}

// deriveRunState sets r's state from its steps (and compensations), as
// section 8.10 defines it. Cancelled is kept: only run_resume leaves it.
func (c *Core) deriveRunState(r *run, at int64) {
	next := r.state
	switch {
	case r.state == runCancelled:
	case r.compensating:
		next = runRolledBack
		for i := range r.steps {
			s := &r.steps[i]
			switch {
			case !s.comp || s.st != Succeeded:
			case s.compTask == 0 && s.compErr == "":
				next = runCompensating // not yet made
			case s.compErr != "":
				if next == runRolledBack {
					next = runRollbackFailed
				}
			case !s.compSt.Terminal():
				next = runCompensating
			case s.compSt != Succeeded && next == runRolledBack:
				next = runRollbackFailed
			}
			if next == runCompensating {
				break
			}
		}
	default:
		next = runSucceeded
		for i := range r.steps {
			s := &r.steps[i]
			if !s.st.Terminal() {
				next = runRunning
				break
			}
			if !s.excused() {
				next = runFailed
			}
		}
	}
	c.setRunState(r, next, at)
}

// setRunState moves r to s, keeping the counts, and marks it for
// settleRuns.
func (c *Core) setRunState(r *run, s runState, at int64) {
	if r.state == s {
		return
	}
	if r.state.ended() != s.ended() {
		if s.ended() {
			c.runs.notEnd--
			c.runs.notEndB -= r.bytes
		} else {
			c.runs.notEnd++
			c.runs.notEndB += r.bytes
		}
	}
	r.state, r.updatedMs = s, at
	c.runs.dirty = append(c.runs.dirty, r.id)
}

// runTaskForgotten follows retention forgetting a task of a run.
func (c *Core) runTaskForgotten(id uint64) {
	ref, ok := c.runs.of[id]
	if !ok {
		return
	}
	delete(c.runs.of, id)
	if r := c.runs.byID[ref.run]; r != nil {
		c.mutRun(ref.run).live--
		c.runs.sweep = true
	}
}

// needsCompensation reports whether failed run r has a succeeded step
// with a compensation.
func (r *run) needsCompensation() bool {
	for i := range r.steps {
		if s := &r.steps[i]; s.comp && s.st == Succeeded {
			return true
		}
	}
	return false
}

// stepIndex returns the index of the step named id, or -1.
func (r *run) stepIndex(id string) int {
	for i := range r.steps {
		if r.steps[i].id == id {
			return i
		}
	}
	return -1
}
