package core

import (
	"slices"
	"strconv"
	"strings"

	"github.com/apollo11/apollo11/wire"
)

// submitReq is a parsed, validated submit.
type submitReq struct {
	typ         string
	priority    uint64
	maxAttempts uint64
	timeoutMs   uint64
	delayMs     uint64
	key         string
	hasKey      bool
	trace       string
	fields      fieldVals
	deps        []uint64 // known ids, deduplicated, in the order given
	unknown     uint64   // the first id of depends_on that names no task, when hasUnknown
	hasUnknown  bool
	wait        bool
	// live says a dependency has not ended. failed says one failed or was
	// cancelled. blocker is the first such that is not optional (0 for
	// none), and blockerState its state.
	live, failed bool
	blocker      uint64
	blockerState State
}

// submitFields are a submit's values, found in one pass over its fields.
type submitFields struct {
	v1      [numV1Fields]string // the values of v1Fields' keys, by row
	given   uint16              // bit i: the submit has row i's key
	wait    string
	hasWait bool
	args    lines
	fields  fieldVals
}

func (f *submitFields) scan(m *wire.Message) {
	for i := range m.Fields {
		fl := &m.Fields[i]
		switch {
		case strings.HasPrefix(fl.Key, wire.PrefixArg):
			f.args.add(i, fl)
		case fl.Key == "wait":
			f.wait, f.hasWait = fl.Value, true
		default:
			if j := v1Index(fl.Key); j >= 0 {
				f.setV1(j, fl.Value)
			} else {
				f.fields.set(fl.Key, fl.Value)
			}
		}
	}
}

// setV1 keeps v as the value of v1Fields' row i, as if its key came.
func (f *submitFields) setV1(i int, v string) { f.v1[i], f.given = v, f.given|1<<i }

// has reports whether the submit has the key of v1Fields' row i.
func (f *submitFields) has(i int) bool { return f.given&(1<<i) != 0 }

// parseSubmit checks a submit's values, in the order the keys are listed
// in the spec.
func (c *Core) parseSubmit(f *submitFields, s *submitReq) error {
	c.sub = submitReq{}
	err := c.readV1(f)
	*s, c.sub = c.sub, submitReq{} // c.sub borrows from the read buffer
	if err != nil {
		return err
	}
	if err := f.fields.check(); err != nil {
		return err
	}
	s.fields = f.fields
	if f.hasWait {
		var err error
		if s.wait, err = wire.BoolValue("wait", f.wait); err != nil {
			return err
		}
	}
	if s.fields[fieldWhen] != "" && len(s.deps) == 0 && !s.hasUnknown {
		return &wire.ValueError{Key: "when", Reason: "needs depends_on: it runs only when a dependency failed"}
	}
	return nil
}

// startState is the state a parsed submit's task starts in, and the
// end it meets at once. A required dependency that failed or was
// cancelled cancels it (blocker). A when=failed task whose
// dependencies all succeeded is skipped (steps.go).
func startState(s *submitReq) (st State, blocker uint64, skip bool) {
	if s.fields[fieldWhen] != "" {
		switch {
		case s.live:
			return Waiting, 0, false
		case s.failed:
			return Pending, 0, false
		}
		return Waiting, 0, true
	}
	if s.live || s.blocker != 0 {
		return Waiting, s.blocker, false
	}
	return Pending, 0, false
}

// readV1 reads the v1 fields into c.sub, row by row.
func (c *Core) readV1(f *submitFields) error {
	for i := range v1Fields {
		row := &v1Fields[i]
		var err error
		if f.has(i) {
			err = row.read(c, f.v1[i])
		} else if row.absent != nil {
			err = row.absent(&c.sub)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// parseDeps reads depends_on. Duplicates count once, and the first
// occurrence keeps its place. Whether each id is a known task is looked up
// here, as the list is read. It is answered later (knownDeps), after the
// idempotency key. A resent keyed submit is then answered with its task,
// even when a dependency has been forgotten since. After an unknown id,
// the submit can only be refused for it or answered as a duplicate. So the
// rest of the list is only checked for syntax. s.deps borrows c.depsBuf
// until the next submit.
func (c *Core) parseDeps(v string, s *submitReq) error {
	s.deps, s.unknown, s.hasUnknown = s.deps[:0], 0, false
	s.live, s.failed, s.blocker, s.blockerState = false, false, 0, 0
	if v == "" { // most submits: leave the scratch alone
		return nil
	}
	s.deps = c.depsBuf[:0]
	var bad error
	long := false // past shortDeps: deduplicated through c.depMarks, as a scan each would be quadratic
	ok := wire.ForEachItem(v, func(item string) bool {
		id, ok := wire.ParseUint(item)
		if !ok {
			bad = &wire.ValueError{Key: "depends_on", Reason: "not a task id: " + strconv.Quote(clipText(item))}
			return false
		}
		if s.hasUnknown {
			return true
		}
		t, ci := c.tasks.find(id)
		if t == nil {
			s.unknown, s.hasUnknown = id, true
			return true
		}
		if !long && len(s.deps) >= shortDeps {
			long = true
			for _, d := range s.deps {
				c.depMarks.mark(c.tasks.chunkIndex(d), d&(chunkSize-1))
			}
		}
		if long {
			if c.depMarks.mark(ci, id&(chunkSize-1)) {
				return true
			}
		} else if slices.Contains(s.deps, id) {
			return true
		}
		s.deps = append(s.deps, id)
		// Its state now, while its task is at hand. Nothing changes
		// before the submit uses it. A second pass over 100,000 tasks
		// would cost a cache miss each.
		switch t.state {
		case Succeeded:
		case Failed, Cancelled:
			s.failed = true
			if s.blocker == 0 && !t.optional() {
				s.blocker, s.blockerState = id, t.state
			}
		default:
			s.live = true
		}
		return true
	})
	if long {
		c.depMarks.release()
	}
	c.depsBuf = s.deps[:0]
	if !ok {
		return &wire.ValueError{Key: "depends_on", Reason: "bad list (comma-separated, no empty items, no spaces)"}
	}
	return bad
}

// knownDeps checks that every dependency of s is a known task. It names
// the first unknown id in the list.
func (c *Core) knownDeps(s *submitReq) error {
	if s.hasUnknown {
		return &wire.ValueError{Key: "depends_on", Reason: "unknown task " + strconv.FormatUint(s.unknown, 10)}
	}
	return nil
}

// taskFrameKeys is the keys of a task frame besides its arg.* keys
// (type and the eight of dispatch). A submit with more args than the
// rest of wire.MaxKeys could never be dispatched.
const taskFrameKeys = 9

// taskFrameMax bounds the size of the task frame a submit will produce,
// counting every number as 20 digits (spec section 1).
func taskFrameMax(typ string, traceLen int, args lines) int {
	return len("type=task") +
		len("\ntask_id=") + 20 + len("\nversion=") + 20 +
		len("\ntask_type=") + wire.EscapedLen(typ) +
		len("\nattempt=") + 20 + len("\nmax_attempts=") + 20 + len("\ntimeout_ms=") + 20 +
		len("\ntrace_id=") + traceLen + len("\nstate_version=") + 20 +
		args.size
}

func (c *Core) submit(p *peer, m *wire.Message, req string) {
	var f submitFields
	f.scan(m)
	var s submitReq
	if err := c.parseSubmit(&f, &s); err != nil {
		c.badRequest(p, req, err)
		return
	}
	if s.hasKey && strings.HasPrefix(s.key, schedKeyPrefix) {
		c.badRequest(p, req, errSchedKey)
		return
	}
	c.policyDefaults(&f, &s)
	if rf := c.submitShape(&s, f.args); rf != nil {
		c.sendError(p, req, rf.code, rf.msg)
		return
	}
	if s.wait && !c.waitRoom(p, req) {
		return
	}
	if s.hasKey {
		if id, ok := c.keys[s.key]; ok {
			c.duplicateSubmit(p, req, id, s.wait)
			return
		}
	}
	if err := c.knownDeps(&s); err != nil {
		c.badRequest(p, req, err)
		return
	}
	if !c.writable(p, req) {
		return
	}
	if rf := c.submitRoom(&s, f.args); rf != nil {
		c.sendError(p, req, rf.code, rf.msg)
		return
	}
	if !c.connRoom(p, req) {
		return
	}
	r := c.newTaskRecord(&s, &f, m)
	if !c.commit(r) {
		c.sendError(p, req, wire.CodeBadRequest, "submit refused")
		return
	}
	id := r.id
	t := c.tasks.get(id)
	c.logTransition(t, 0, t.state, "submit")
	c.submitted(p, id)
	b := c.begin(wire.KindSubmitted, req)
	b.UintK(kTaskID, id)
	c.confirm(p.id, &b)
	if s.wait {
		c.waitFor(p, id, req)
	}
	c.endAtOnce(id, &s, "submit")
}

// endAtOnce ends a task just made whose dependencies had decided its end
// before it was. It is cancelled by one that failed, or skipped (startState).
func (c *Core) endAtOnce(id uint64, s *submitReq, why string) {
	switch _, blocker, skip := startState(s); {
	case blocker != 0:
		c.endTask(id, Cancelled, "dependency "+strconv.FormatUint(blocker, 10)+" "+s.blockerState.String(), "", 0, why)
	case skip:
		c.endTask(id, Cancelled, errSkipped, "", 0, why+": every dependency succeeded (when=failed)")
	}
}

// refusal is why a new task is not made, the error a submit gets.
type refusal struct {
	code wire.Code
	msg  string
}

// submitShape checks that the task frame of s could be sent at all.
func (c *Core) submitShape(s *submitReq, args lines) *refusal {
	if taskFrameKeys+args.n > wire.MaxKeys {
		return &refusal{wire.CodeBadRequest, "submit has too many args: a task frame holds at most " +
			strconv.Itoa(wire.MaxKeys-taskFrameKeys) + " arg.* keys"}
	}
	if taskFrameMax(s.typ, traceLen(s.trace), args) > c.cfg.MaxFrame {
		return &refusal{wire.CodeBadRequest, "submit too large: its task frame could exceed max_frame " + strconv.Itoa(c.cfg.MaxFrame)}
	}
	return nil
}

// submitRoom checks the caps a new task counts against. Those are tasks
// not ended, their bytes, and the known task types.
func (c *Core) submitRoom(s *submitReq, args lines) *refusal {
	if c.nonTerminal() >= c.cfg.MaxPending {
		return &refusal{wire.CodeQueueFull, "queue full: " + strconv.Itoa(c.cfg.MaxPending) + " tasks not yet ended; retry later"}
	}
	if rf := c.pendingRoom(submitBytes(s, args)); rf != nil {
		return rf
	}
	if len(c.types) >= c.cfg.MaxTaskTypes && c.types[s.typ] == nil {
		return &refusal{wire.CodeQueueFull, "queue full: " + strconv.Itoa(len(c.types)) +
			" task types are known, --max-task-types; a task of a new type waits until some are forgotten; retry later"}
	}
	return nil
}

// newTaskRecord fills the scratch record with the new task s makes. The
// values m's fields borrow from are copied.
func (c *Core) newTaskRecord(s *submitReq, f *submitFields, m *wire.Message) *record {
	now := c.now()
	r := c.newRecord(recNew)
	r.id, r.at = c.nextID, now
	c.fillV1(s, r)
	r.fields = s.fields
	r.fields.clone()
	r.args, r.argKeys = encodePrefixed(m, wire.PrefixArg, f.args)
	r.state, _, _ = startState(s)
	return r
}

// duplicateSubmit answers a submit whose key names a known task.
func (c *Core) duplicateSubmit(p *peer, req string, id uint64, wait bool) {
	b := c.begin(wire.KindSubmitted, req)
	b.UintK(kTaskID, id)
	b.BoolK(kDuplicate, true)
	c.confirm(p.id, &b)
	if !wait {
		return
	}
	if t := c.tasks.get(id); t.state.Terminal() {
		job := jobOf(t)
		c.sendDone(p.id, req, &job)
		return
	}
	c.waitFor(p, id, req)
}

// pendingRoom reports why the tasks not yet ended have no room under
// --max-pending-bytes for a task of need bytes, or nil when they have. The
// error is queue_full, as when the count cap is reached. A task that alone
// holds more than the cap gets bad_request, since no retry would let it in.
func (c *Core) pendingRoom(need int64) *refusal {
	limit := int64(c.cfg.MaxPendingBytes)
	if limit < 0 || c.pendingBytes+need <= limit {
		return nil
	}
	if need > limit {
		return &refusal{wire.CodeBadRequest, "submit too large: its task would hold " + strconv.FormatInt(need, 10) +
			" bytes, more than --max-pending-bytes " + strconv.FormatInt(limit, 10)}
	}
	return &refusal{wire.CodeQueueFull, "queue full: tasks not yet ended hold " + strconv.FormatInt(c.pendingBytes, 10) +
		" bytes; this submit's " + strconv.FormatInt(need, 10) + " more would pass --max-pending-bytes " +
		strconv.FormatInt(limit, 10) + "; retry later"}
}

// submitBytes is what the task a submit would make counts (heldBytes),
// from the parsed submit. It is known before the record is built, so a
// refusal copies none of its args.
func submitBytes(s *submitReq, args lines) int64 {
	key := ""
	if s.hasKey {
		key = s.key
	}
	b := heldBytes(s.typ, "", key, s.trace, len(s.deps), "", "") + s.fields.bytes()
	if args.n > 0 {
		b += int64(args.size - 1) // args.size counts one LF past the last line
	}
	return b
}

// nonTerminal counts tasks that have not ended, waiting included.
func (c *Core) nonTerminal() int {
	return c.counts[Waiting] + c.counts[Pending] + c.counts[Dispatched] + c.counts[Running] + c.counts[Retrying]
}

// terminal counts the ended tasks kept.
func (c *Core) terminal() int {
	return c.counts[Succeeded] + c.counts[Failed] + c.counts[Cancelled]
}

// waitFor makes p wait for task id's done, answering req.
func (c *Core) waitFor(p *peer, id uint64, req string) {
	if p.waits == nil {
		p.waits = &peerWaits{}
	}
	c.waiters.add(id, p.id, p.waits, req)
}

// waitRoom reports whether p may wait for one more done, and answers the
// submit when it may not. Past its connection's cap it gets bad_request,
// as before, since that connection asks too much. Past --max-waits over
// all connections it gets unavailable. A duplicate submit is never
// queue_full, and the cause is others' waits, gone when their tasks end.
func (c *Core) waitRoom(p *peer, req string) bool {
	if limit := min(c.cfg.MaxPending, maxWaitsPerConn); p.waits != nil && p.waits.n >= limit {
		c.sendEscapedError(p, req, wire.CodeBadRequest, c.waitRefusals[0].text("wait=true: this connection already waits for ",
			limit, " done replies, its limit; wait for some to come first, or submit without wait"))
		return false
	}
	if c.waiters.total >= c.cfg.MaxWaits {
		c.sendEscapedError(p, req, wire.CodeUnavailable, c.waitRefusals[1].text("wait=true: all connections together wait for ",
			c.waiters.total, " done replies, --max-waits; nothing was submitted; retry later, or submit without wait"))
		return false
	}
	return true
}

// numText is a message with a number in it, built and escaped for the
// wire again only when the number changes. A flood past a cap meets it
// per frame, and escaping its `=` was a tenth of the loop's work.
type numText struct {
	n int
	s string // escaped (wire.AppendEscaped)
}

func (t *numText) text(before string, n int, after string) string {
	if t.s == "" || t.n != n {
		t.n, t.s = n, string(wire.AppendEscaped(nil, before+strconv.Itoa(n)+after))
	}
	return t.s
}
