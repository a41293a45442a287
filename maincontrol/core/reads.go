package core

import (
	"slices"
	"strconv"

	"github.com/apollo11/apollo11/wire"
)

// requestedTask returns the task a request names with task_id, or answers
// bad_request or unknown_task and returns nil.
func (c *Core) requestedTask(p *peer, m *wire.Message, req string) *task {
	id, err := m.Uint("task_id")
	if err != nil {
		c.badRequest(p, req, err)
		return nil
	}
	t := c.tasks.get(id)
	if t == nil {
		c.sendError(p, req, wire.CodeUnknownTask, "unknown task "+strconv.FormatUint(id, 10))
	}
	return t
}

func (c *Core) query(p *peer, m *wire.Message, req string) {
	t := c.requestedTask(p, m, req)
	if t == nil {
		return
	}
	b := c.begin(wire.KindTaskState, req)
	b.UintK(kTaskID, t.id)
	b.UintK(kVersion, t.version)
	b.StrK(kState, t.state.String())
	b.UintK(kAttempt, uint64(t.attempt))
	b.UintK(kMaxAttempts, t.maxAttempts)
	b.StrK(kTaskType, t.typ.name)
	if t.execID != "" {
		b.StrK(kExecutorID, t.execID)
	}
	if e := t.errText(); e != "" {
		b.StrK(kError, e)
	}
	out, n := t.out()
	b.RawString(out, n)
	b.IntK(kCreatedMs, t.createdMs)
	b.IntK(kUpdatedMs, t.updatedMs)
	addTrace(&b, t)
	if n := t.requeues(); n > 0 {
		b.UintK(kRequeues, n)
		if r := t.requeueReason(); r != "" {
			b.StrK(kRequeueReason, r)
		}
	}
	t.fields().reply(&b)
	c.runTaskKeys(&b, t.id)
	c.taskStateExtras(&b, t)
	c.send(p.id, &b)
}

// list answers `list state=<s> [limit] [after]` with ascending ids. It sends
// fewer than limit when the frame would exceed the max frame. next says
// more follow.
func (c *Core) list(p *peer, m *wire.Message, req string) {
	name, ok := m.Get("state")
	if !ok {
		c.badRequest(p, req, wire.MissingKey("state"))
		return
	}
	st, ok := ParseState(name)
	if !ok {
		c.badRequest(p, req, &wire.ValueError{Key: "state", Reason: "unknown state " + strconv.Quote(clipText(name))})
		return
	}
	limit, after, err := pageArgs(m)
	if err != nil {
		c.badRequest(p, req, err)
		return
	}
	// Room for the ids is the frame minus the fixed keys. Those count numbers
	// at 20 digits and a req of up to 64 escaped bytes.
	room := c.cfg.MaxFrame - (len("type=tasks\nreq=") + wire.EscapedLen(req) +
		len("\ncount=") + 20 + len("\nids=") + len("\nnext=") + 20)
	ids := c.idsBuf[:0]
	more := false
	used := 0
	c.tasks.scan(after, st, func(t *task) bool {
		w := len(strconv.AppendUint(c.frame[:0], t.id, 10)) + 1
		if uint64(len(ids)) == limit || used+w > room {
			more = true
			return false
		}
		used += w
		ids = append(ids, t.id)
		return true
	})
	b := c.begin(wire.KindTasks, req)
	b.UintK(kCount, uint64(len(ids)))
	var list []byte
	for i, id := range ids {
		if i > 0 {
			list = append(list, ',')
		}
		list = strconv.AppendUint(list, id, 10)
	}
	b.StrK(kIDs, string(list))
	if more && len(ids) > 0 {
		b.UintK(kNext, ids[len(ids)-1])
	}
	c.idsBuf = ids[:0]
	c.send(p.id, &b)
}

func (c *Core) stats(p *peer, _ *wire.Message, req string) {
	b := c.begin(wire.KindStats, req)
	for _, s := range AllStates {
		b.UintK(kTasksState[s], uint64(c.counts[s]))
	}
	connected := 0
	for _, e := range c.execs {
		if e.connected() {
			connected++
		}
	}
	b.UintK(kExecutors, uint64(connected))
	b.UintK(kStateVersion, c.stateVer)
	b.IntK(kUptimeMs, c.now()-c.startMs)
	b.Str("state_bytes", strconv.FormatInt(c.stateBytes, 10))
	b.Str("pending_bytes", strconv.FormatInt(c.pendingBytes, 10))
	b.Str("retained_bytes", strconv.FormatInt(c.retainedBytes, 10))
	b.Str("executors.known", strconv.Itoa(len(c.execs)))
	b.Str("connections", strconv.Itoa(len(c.peers)))
	b.Str("retrying.armed", strconv.Itoa(c.armed))
	b.Str("next_task_id", strconv.FormatUint(c.nextID, 10))
	b.Bool("available", c.available)
	b.Str("stuck", strconv.Itoa(c.Stuck().Stuck))
	b.Str("types.paused", strconv.Itoa(len(c.paused)))
	c.send(p.id, &b)
}

// stateGet answers state_get with the requested keys, or all when keys is
// absent or empty. Keys not set are left out.
func (c *Core) stateGet(p *peer, m *wire.Message, req string) {
	keys, err := m.List("keys")
	if err != nil {
		c.badRequest(p, req, err)
		return
	}
	if len(keys) == 0 {
		keys = make([]string, 0, len(c.state))
		for k := range c.state {
			keys = append(keys, k)
		}
		slices.Sort(keys)
	} else {
		// A key asked for twice is answered once. The reply may not
		// repeat a key (spec section 2).
		keys = firstOfEach(keys)
	}
	size := len("type=state\nreq=") + wire.EscapedLen(req) + len("\nstate_version=") + 20
	room := wire.MaxKeys - stateReplyKeys
	if req == "" { // executors ask without one
		room++
	}
	b := c.begin(wire.KindState, req)
	b.UintK(kStateVersion, c.stateVer)
	for _, k := range keys {
		v, ok := c.state[k]
		if !ok {
			continue
		}
		// Nothing bounds how many keys the shared state holds. So the
		// key count, like the bytes, can outgrow one payload (spec
		// section 2). Either way the request is answered, not dropped.
		if room--; room < 0 {
			c.sendError(p, req, wire.CodeBadRequest, "state reply would exceed "+strconv.Itoa(wire.MaxKeys)+" keys: ask for fewer keys")
			return
		}
		size += 1 + len(wire.PrefixState) + len(k) + 1 + wire.EscapedLen(v)
		if size > c.cfg.MaxFrame {
			c.sendError(p, req, wire.CodeBadRequest, "state reply would exceed max_frame "+strconv.Itoa(c.cfg.MaxFrame)+": ask for fewer keys")
			return
		}
		b.PrefixStr(wire.PrefixState, k, v)
	}
	c.send(p.id, &b)
}

// firstOfEach returns list without repeats, each item where it first
// appears, reusing list's array. Long lists are deduplicated through a
// set. A scan each would be quadratic in a 1 MiB keys= value.
func firstOfEach(list []string) []string {
	out := list[:0]
	if len(list) <= shortKeys {
		for _, k := range list {
			if !slices.Contains(out, k) {
				out = append(out, k)
			}
		}
		return out
	}
	seen := make(map[string]struct{}, len(list))
	for _, k := range list {
		if _, dup := seen[k]; !dup {
			seen[k] = struct{}{}
			out = append(out, k)
		}
	}
	return out
}

// shortKeys is the length of a keys= list up to which repeats are found
// by a scan.
const shortKeys = 16

// stateReplyKeys is the keys of a state reply besides state.*. They are
// type, req (when the request had one) and state_version.
const stateReplyKeys = 3

func (c *Core) setDebug(p *peer, m *wire.Message, req string) {
	on, err := m.Bool("on")
	if err != nil {
		c.badRequest(p, req, err)
		return
	}
	c.debug = on
	if fl, ok := c.fx.(FrameLog); ok {
		fl.LogFrames(on)
	}
	c.log.Info("frame logging", "on", on)
	b := c.begin(wire.KindDebugOK, req)
	c.send(p.id, &b)
}

// pageArgs reads the paging keys of `list` and `run_list`. limit is 1 to
// 1,000, default 100. after is an id, default 0 for the first page.
func pageArgs(m *wire.Message) (limit, after uint64, err error) {
	if limit, err = m.UintOr("limit", 100); err != nil {
		return 0, 0, err
	}
	if limit < 1 || limit > 1000 {
		return 0, 0, &wire.ValueError{Key: "limit", Reason: "must be 1 to 1000"}
	}
	after, err = m.UintOr("after", 0)
	return limit, after, err
}
