package core

import (
	"cmp"
	"log/slog"
	"slices"
	"strconv"
	"strings"

	"github.com/apollo11/apollo11/wire"
)

// heartbeat answers with pong and reconciles the executor's running= list
// (spec section 4).
func (c *Core) heartbeat(p *peer, m *wire.Message) {
	seq, err := m.Uint("seq")
	if err != nil {
		c.badRequest(p, "", err)
		return
	}
	e := p.exec
	c.listed = c.listed[:0]
	bad, long := false, false
	limit := runningLimit(e)
	ok := wire.ForEachItem(m.Value("running"), func(item string) bool {
		if len(c.listed) == limit {
			long = true
			return false
		}
		id, ver, good := parseToken(item)
		if !good {
			bad = true
			return false
		}
		c.listed = append(c.listed, token{id, ver})
		return true
	})
	if long {
		c.badRequest(p, "", &wire.ValueError{Key: "running", Reason: "more than " + strconv.Itoa(limit) +
			" dispatches listed; an executor with " + strconv.Itoa(e.slots) + " slots lists at most " +
			"twice its slots (or the dispatches it holds) plus " + strconv.Itoa(runningSlack)})
		return
	}
	if !ok || bad {
		c.badRequest(p, "", &wire.ValueError{Key: "running", Reason: "must be a list of task_id.version"})
		return
	}
	b := wire.Begin(c.frame[:0], wire.KindPong)
	b.UintK(kSeq, seq)
	c.send(p.id, &b)
	c.reconcile(e)
}

// runningSlack is what a running= list may hold beyond twice the larger
// of the executor's slots and its dispatches. It covers old dispatches
// still finishing after a cancel or a reconnect.
const runningSlack = 64

// runningLimit bounds a heartbeat's running= list. A longer one is
// bad_request. Each entry may cost a cancel frame, so it would let one
// heartbeat ask for megabytes of replies.
func runningLimit(e *executor) int { return 2*max(e.slots, e.load) + runningSlack }

// maxUnknownCancels bounds the cancels one heartbeat gets for dispatches
// that are not this executor's. A few bytes listed cost a cancel of
// about forty. Dispatches left out are listed again, and cancelled then.
const maxUnknownCancels = 1024

// token is a dispatch token, task_id.version.
type token struct {
	id  uint64
	ver uint64
}

func compareTokens(a, b token) int {
	if a.id != b.id {
		return cmp.Compare(a.id, b.id)
	}
	return cmp.Compare(a.ver, b.ver)
}

// parseToken parses task_id.version.
func parseToken(s string) (uint64, uint64, bool) {
	i := strings.IndexByte(s, '.')
	if i < 0 {
		return 0, 0, false
	}
	id, ok1 := wire.ParseUint(s[:i])
	ver, ok2 := wire.ParseUint(s[i+1:])
	if !ok1 || !ok2 {
		return 0, 0, false
	}
	return id, ver, true
}

// reconcile compares the executor's running= list (in c.listed) with what
// the core thinks runs there. Each listed token is judged on its own. An id
// listed twice, an old dispatch still running beside the current one, gets
// a cancel for the old version. A running task counts as listed only under
// its current version.
func (c *Core) reconcile(e *executor) {
	e.hbCount++
	now := c.now()
	// Sorted, so that cancels go out in id order whatever the list's order,
	// and a token listed twice is handled once.
	slices.SortFunc(c.listed, compareTokens)
	c.listed = slices.Compact(c.listed)
	// Cancels for dispatches the core does not hold here are bounded. They
	// wait while the executor has not read what it was sent, since it lists
	// them again while they run.
	unknown := maxUnknownCancels
	if c.backlogged(e.peer) {
		unknown = 0
	}
	skipped := 0
	for _, tk := range c.listed {
		id, ver := tk.id, tk.ver
		a := e.tasks.ref(id)
		t := c.tasks.get(id)
		if a == nil || a.ver != ver || t == nil || t.version != ver {
			if unknown == 0 {
				skipped++
				continue
			}
			unknown--
			c.sendCancel(e, id, ver) // not dispatched or running here
			continue
		}
		a.listed = true
		a.missed = 0
		wasRestored := a.restored
		a.restored = false
		switch {
		case t.state == Dispatched:
			// Listed as running, so it started. Its started was lost in a
			// restart, or is implied.
			c.startTask(t, now, "listed in running=")
		case wasRestored && t.state == Running && t.timeoutMs > 0:
			// A restored running task's timeout starts when it is listed.
			// The deadline is live state, so after another restart it
			// starts again from the next listing.
			mt := c.tasks.mut(id)
			mt.dueMs = addMs(now, t.timeoutMs)
			c.addTimer(timer{at: mt.dueMs, id: id, ver: ver, kind: timerDue})
		}
	}
	if skipped > 0 {
		c.logLimited(slog.LevelInfo, "cancels held back: the heartbeat lists more dispatches unknown here than one heartbeat answers, "+
			"or the executor has not read its output", "executor", e.id, "held_back", skipped)
	}
	lost := c.lostBuf[:0]
	for id, a := range e.tasks.all() {
		if a.listed {
			a.listed = false
			continue
		}
		if a.restored {
			continue
		}
		if t := c.tasks.get(id); t == nil || t.state != Running {
			continue
		}
		a.missed++
		if a.missed >= 2 {
			lost = append(lost, id)
		}
	}
	slices.Sort(lost)
	for _, id := range lost {
		a, _ := e.tasks.get(id)
		ver := a.ver
		c.sendCancel(e, id, ver)
		c.failAttempt(id, true, false, true, "missing from two running lists of executor "+e.id, "", 0, "reconciliation")
	}
	c.lostBuf = lost[:0]
}

// startTask moves a dispatched task to running. Its timeout runs from now.
func (c *Core) startTask(t *task, now int64, why string) {
	r := c.newRecord(recStart)
	r.id, r.version, r.at = t.id, t.version, now
	if t.timeoutMs > 0 {
		r.due = addMs(now, t.timeoutMs)
	}
	if c.commit(r) {
		c.logTransition(c.tasks.get(r.id), Dispatched, Running, why)
	}
}

// currentDispatch returns the task if (id, ver) from e is its current
// dispatch.
func (c *Core) currentDispatch(e *executor, id uint64, ver uint64) *task {
	t := c.tasks.get(id)
	if t == nil || t.version != ver || t.execID != e.id || t.flags&flagTakenBack != 0 || ver == 0 {
		return nil
	}
	return t
}

// parseDispatchToken reads task_id and version, the pair that names one
// dispatch, in one pass over the fields. started and result are the two
// most frequent messages, and each carries both.
func (c *Core) parseDispatchToken(p *peer, m *wire.Message) (uint64, uint64, bool) {
	var idText, verText string
	var hasID, hasVer bool
	for i := range m.Fields {
		f := &m.Fields[i]
		switch {
		case !hasID && f.Key == "task_id":
			idText, hasID = f.Value, true
		case !hasVer && f.Key == "version":
			verText, hasVer = f.Value, true
		}
	}
	id, err := tokenPart("task_id", idText, hasID)
	if err != nil {
		c.badRequest(p, "", err)
		return 0, 0, false
	}
	ver, err := tokenPart("version", verText, hasVer)
	if err != nil {
		c.badRequest(p, "", err)
		return 0, 0, false
	}
	return id, ver, true
}

// tokenPart parses one half of a dispatch token as Message.Uint would.
func tokenPart(k, v string, present bool) (uint64, error) {
	if !present {
		return 0, wire.MissingKey(k)
	}
	return wire.UintValue(k, v)
}

// started moves a task from dispatched to running. It gets no reply. A
// mismatch is ignored and logged.
func (c *Core) started(p *peer, m *wire.Message) {
	id, ver, ok := c.parseDispatchToken(p, m)
	if !ok {
		return
	}
	t := c.currentDispatch(p.exec, id, ver)
	if t == nil || t.state != Dispatched {
		if t != nil && (t.state == Running || t.state.Terminal()) {
			// After a reconnect an executor sends started again for what
			// it still runs, and before each result not yet acknowledged
			// (spec section 4). That is expected, not news.
			c.log.Debug("started again for this dispatch", "task_id", id, "version", ver, "executor", p.exec.id,
				"state", t.state.String())
			return
		}
		c.log.Info("started ignored: not the current dispatch", "task_id", id, "version", ver, "executor", p.exec.id)
		return
	}
	if a := p.exec.tasks.ref(id); a != nil {
		a.restored = false
	}
	c.startTask(t, c.now(), "started")
}

// progress is optional and informational. It is checked, kept for query
// (protocol section 8.8) and logged.
func (c *Core) progress(p *peer, m *wire.Message) {
	id, ver, ok := c.parseDispatchToken(p, m)
	if !ok {
		return
	}
	pct, err := m.Uint("percent")
	if err != nil {
		c.badRequest(p, "", err)
		return
	}
	if pct > 100 {
		c.badRequest(p, "", &wire.ValueError{Key: "percent", Reason: "must be 0 to 100"})
		return
	}
	t := c.currentDispatch(p.exec, id, ver)
	if t == nil || (t.state != Dispatched && t.state != Running) {
		if c.debugEnabled() {
			c.log.Debug("progress ignored: not a current dispatch", "task_id", id, "version", ver, "executor", p.exec.id)
		}
		return
	}
	c.keepProgress(t, pct, m.Value("note"))
	if c.debugEnabled() {
		c.log.Debug("task progress", "task_id", id, "version", ver, "percent", pct, "note", m.Value("note"), "executor", p.exec.id)
	}
}

// bye means the executor leaves. Dispatched tasks go back to pending.
// Running ones use an attempt and retry at once, or fail.
func (c *Core) bye(p *peer, m *wire.Message) {
	e := p.exec
	c.logLimited(slog.LevelInfo, "executor leaves", "executor", e.id, "reason", clipText(m.Value("reason")), "tasks", e.tasks.len())
	c.takeBackAll(e, true, "executor left (bye)")
	b := wire.Begin(c.frame[:0], wire.KindByeAck)
	c.send(p.id, &b)
	c.closePeer(p)
	r := c.newRecord(recExecGone)
	r.exec, r.why = e.id, "bye"
	c.commit(r)
}

// takeBackAll takes back every dispatch of e. Dispatched tasks go pending.
// Running ones go retrying (immediately pending when bye) or failed.
func (c *Core) takeBackAll(e *executor, immediate bool, why string) {
	ids := e.tasks.ids(c.idsBuf[:0])
	slices.Sort(ids)
	for _, id := range ids {
		t := c.tasks.get(id)
		switch t.state {
		case Dispatched:
			c.requeue(id, why)
		case Running:
			c.failAttempt(id, true, immediate, true, why, "", 0, why)
		}
	}
	c.idsBuf = ids[:0]
}

// requeue takes a dispatched task back to pending. No attempt is used.
func (c *Core) requeue(id uint64, why string) {
	r := c.newRecord(recBack)
	r.id, r.at, r.why = id, c.now(), why
	if c.commit(r) {
		c.logTransition(c.tasks.get(id), Dispatched, Pending, why)
	}
}
