package core

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apollo11/apollo11/wire"
	"github.com/stretchr/testify/require"
)

// expectedReason predicts the result_ack of a result from e for (id, ver).
func (p *prop) expectedReason(e *propExec, id uint64, ver uint64) wire.Reason {
	c := p.h.c
	tk := c.tasks.get(id)
	switch {
	case tk == nil:
		return wire.ReasonUnknownTask
	case ver == 0 || tk.version != ver || tk.execID != e.name || tk.flags&flagTakenBack != 0:
		return wire.ReasonStale
	case tk.state == Cancelled:
		return wire.ReasonCancelled
	case tk.state != Running:
		return wire.ReasonIllegalTransition
	}
	return ""
}

func (p *prop) doSubmit() {
	h, c := p.h, p.h.c
	cl := p.clients[p.pick(len(p.clients))]
	kv := []string{"req", "s" + strconv.Itoa(p.step), "task_type", []string{"a", "b", "c", "d"}[p.pick(4)]}
	if p.chance(70) {
		kv = append(kv, "priority", strconv.Itoa(p.pick(10)))
	}
	if p.chance(20) {
		kv = append(kv, "delay_ms", strconv.Itoa(1+p.pick(4000)))
	}
	key := ""
	if p.chance(30) {
		key = p.keys[p.pick(len(p.keys))]
		kv = append(kv, "key", key)
	}
	unknownDep := false
	if p.chance(25) && c.nextID > 1 {
		var deps []string
		n := 1 + p.pick(3)
		if p.chance(20) { // past shortDeps: the long paths (marks, lists, cursors), with repeats
			n = shortDeps + p.pick(3*shortDeps)
		}
		for range n {
			lo := uint64(1)
			if c.nextID > 40 {
				lo = c.nextID - 40
			}
			d := lo + p.rnd.Uint64N(c.nextID-lo+1) // may be the next id: unknown
			if c.tasks.get(d) == nil {
				unknownDep = true
			}
			deps = append(deps, strconv.FormatUint(d, 10))
		}
		kv = append(kv, "depends_on", strings.Join(deps, ","))
		if p.chance(25) {
			kv = append(kv, "when", "failed")
		}
	}
	if p.chance(15) {
		kv = append(kv, "optional", "true")
	}
	kv = append(kv, "max_attempts", strconv.Itoa(1+p.pick(4)))
	if p.chance(30) {
		kv = append(kv, "timeout_ms", strconv.Itoa(200+p.pick(5000)))
	}
	wait := p.chance(30)
	if wait {
		kv = append(kv, "wait", "true")
	}
	if p.chance(30) {
		kv = append(kv, "arg.x", strings.Repeat("=", p.pick(50)), "arg.y", "1")
	}
	if p.chance(10) {
		kv = append(kv, "trace_id", "tr"+strconv.Itoa(p.step))
	}
	dupOf, isDup := c.keys[key]
	full := c.nonTerminal() >= c.cfg.MaxPending
	tooBig := !full && sentSubmitBytes(kv) > propMaxPendingBytes // a long depends_on alone
	fullBytes := !full && c.pendingBytes+sentSubmitBytes(kv) > propMaxPendingBytes
	h.send(cl, "submit", kv...)
	fs := h.fx.frames[cl]
	require.NotEmpty(p.t, fs)
	m := fs[0]
	switch {
	case key != "" && isDup: // the key first: the task, even if a dependency is gone
		require.Equal(p.t, "submitted", m.Type(), "%s", m)
		require.Equal(p.t, "true", m.Value("duplicate"))
		require.Equal(p.t, strconv.FormatUint(dupOf, 10), m.Value("task_id"))
		if wait {
			p.waits[dupOf]++
		}
		p.stats["duplicate"]++
	case unknownDep:
		require.Equal(p.t, "bad_request", m.Value("code"), "%s", m)
	case full:
		require.Equal(p.t, "queue_full", m.Value("code"), "%s", m)
		require.Contains(p.t, m.Value("message"), "tasks not yet ended;")
		p.stats["full:count"]++
	case tooBig:
		require.Equal(p.t, "bad_request", m.Value("code"), "%s", m)
		require.Contains(p.t, m.Value("message"), "more than --max-pending-bytes")
		p.stats["too_big"]++
	case fullBytes:
		require.Equal(p.t, "queue_full", m.Value("code"), "%s", m)
		require.Contains(p.t, m.Value("message"), "--max-pending-bytes")
		p.stats["full:bytes"]++
	default:
		require.Equal(p.t, "submitted", m.Type(), "%s", m)
		id, err := m.Uint("task_id")
		require.NoError(p.t, err)
		if wait {
			p.waits[id]++
		}
		p.stats["submit"]++
	}
}

// sentSubmitBytes is what a submit's task counts toward --max-pending-bytes,
// from its fields as sent: type, arg.* lines as a frame carries them (LF
// between), key, trace_id, and DepBytes per distinct depends_on id.
func sentSubmitBytes(kv []string) int64 {
	var n int64
	args := 0
	for i := 0; i+1 < len(kv); i += 2 {
		switch k, v := kv[i], kv[i+1]; {
		case k == "task_type" || k == "key" || k == "trace_id" || k == "when" || k == "optional":
			n += int64(len(v))
		case k == "depends_on":
			seen := map[string]bool{}
			for _, d := range strings.Split(v, ",") {
				seen[d] = true
			}
			n += int64(DepBytes * len(seen))
		case strings.HasPrefix(k, "arg."):
			if args > 0 {
				n++ // LF
			}
			args++
			n += int64(len(k) + 1 + wire.EscapedLen(v))
		}
	}
	return n
}

// randomToken picks a dispatch for e to talk about: mostly one it holds,
// sometimes an old or made-up one.
func (p *prop) randomToken(e *propExec) (uint64, uint64) {
	if len(e.held) > 0 && p.chance(85) {
		ids := make([]uint64, 0, len(e.held))
		for id := range e.held {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		id := ids[p.pick(len(ids))]
		ver := e.held[id]
		if p.chance(10) {
			ver = uint64(p.pick(int(ver) + 2))
		}
		return id, ver
	}
	return 1 + p.rnd.Uint64N(p.h.c.nextID+2), uint64(p.pick(5))
}

func (p *prop) doStarted(e *propExec) {
	id, ver := p.randomToken(e)
	p.send(e, "started", "task_id", strconv.FormatUint(id, 10), "version", strconv.FormatUint(uint64(ver), 10))
}

func (p *prop) doResult(e *propExec) {
	h := p.h
	id, ver := p.randomToken(e)
	status := "succeeded"
	if p.chance(40) {
		status = "failed"
	}
	kv := []string{"task_id", strconv.FormatUint(id, 10), "version", strconv.FormatUint(uint64(ver), 10), "status", status}
	if status == "failed" && p.chance(30) {
		kv = append(kv, "retryable", "false")
	}
	if p.chance(30) {
		kv = append(kv, "error", "err"+strconv.Itoa(p.step))
	}
	tooBig := p.chance(4)
	if tooBig {
		kv = append(kv, "out.big", strings.Repeat("x", propMaxFrame))
	} else if p.chance(40) {
		kv = append(kv, "out.v", strconv.Itoa(p.step))
	}
	invalid := false
	if p.chance(50) {
		used := map[string]bool{}
		for range 1 + p.pick(3) {
			k := "k" + strconv.Itoa(p.pick(5))
			if used[k] {
				continue
			}
			used[k] = true
			if p.chance(50) {
				kv = append(kv, "state.set."+k, strconv.Itoa(p.pick(100)-50))
			} else {
				kv = append(kv, "state.add."+k, strconv.Itoa(p.pick(100)-50))
			}
		}
		if p.chance(10) {
			invalid = true
			if p.chance(50) {
				kv = append(kv, "state.add.bad", "x")
			} else {
				kv = append(kv, "state.set.both", "1", "state.add.both", "1")
			}
		}
	}
	want := p.expectedReason(e, id, ver)
	if want == "" && (tooBig || (invalid && status == "succeeded")) {
		want = wire.ReasonIllegalValue
	}
	// A refused result must change nothing: the whole dump is compared for
	// one refusal in four (it is the costly part of this test), the task
	// and its executor for the others.
	var before string
	var taskBefore task
	var loadBefore int
	nrec := len(h.fx.records)
	stateVer := h.c.stateVer
	refused := want != "" && want != wire.ReasonIllegalValue
	if refused && p.chance(25) {
		before = dump(h.c)
	}
	if tk := h.c.tasks.get(id); tk != nil {
		taskBefore = *tk
	}
	if ex := h.c.execs[e.name]; ex != nil {
		loadBefore = ex.load
	}
	p.sentStatus[tokenKey{id, ver}] = status
	p.send(e, "result", kv...)
	delete(e.held, id) // the executor is done with it, whatever the answer
	fs := h.fx.frames[e.peer]
	require.NotEmpty(p.t, fs)
	ack := fs[0]
	require.Equal(p.t, "result_ack", ack.Type(), "%s", ack)
	if want == "" {
		require.Equal(p.t, "true", ack.Value("accepted"), "step %d: %s", p.step, ack)
		if status == "succeeded" && hasStateKeys(msg("result", kv...)) {
			require.Equal(p.t, stateVer+1, h.c.stateVer, "+1 per accepted result with state changes")
		} else {
			require.Equal(p.t, stateVer, h.c.stateVer)
		}
		p.stats["accepted"]++
		return
	}
	require.Equal(p.t, "false", ack.Value("accepted"), "step %d: %s", p.step, ack)
	require.Equal(p.t, string(want), ack.Value("reason"), "step %d", p.step)
	require.Equal(p.t, stateVer, h.c.stateVer)
	p.stats["refused:"+string(want)]++
	if !refused {
		require.Equal(p.t, Failed, h.state(id), "illegal_value fails the task")
		return
	}
	require.Len(p.t, h.fx.records, nrec)
	if tk := h.c.tasks.get(id); tk != nil {
		require.Equal(p.t, taskBefore, *tk, "step %d: a refused result changed its task", p.step)
	}
	if ex := h.c.execs[e.name]; ex != nil {
		require.Equal(p.t, loadBefore, ex.load)
	}
	if before != "" {
		require.Equal(p.t, before, dump(h.c), "step %d: a refused result changed the state", p.step)
	}
}

func (p *prop) doRegister(e *propExec) {
	h := p.h
	peer := h.open()
	kv := []string{"executor_id", e.name, "task_types", strings.Join(e.types, ","), "slots", strconv.Itoa(e.slots)}
	if e.peer != 0 { // a duplicate of a live one
		h.send(peer, "register", kv...)
		h.expectErr(peer, wire.CodeDuplicateExecutor)
		require.True(p.t, h.fx.closed[peer])
		return
	}
	h.send(peer, "register", kv...)
	h.expect(peer, "registered")
	e.peer, e.seen = peer, p.now()
	p.stats["register"]++
}

// doTick moves the clock; executors heartbeat on their timer (listing all
// they hold), so only doSilence loses one.
func (p *prop) doTick(d time.Duration) {
	p.h.advance(d)
	// Retention has run: within both of its caps.
	c := p.h.c
	require.LessOrEqual(p.t, c.terminal(), c.cfg.RetentionMax, "step %d: ended tasks kept", p.step)
	if c.terminal() > 1 { // the newest ended task stays, whatever its size
		require.LessOrEqual(p.t, c.retainedBytes, int64(propRetentionMaxBytes), "step %d: bytes of the ended tasks kept", p.step)
	}
	if c.terminal() == c.cfg.RetentionMax {
		p.stats["retention:count"]++
	}
	if c.retainedBytes > propRetentionMaxBytes-40 {
		p.stats["retention:bytes"]++
	}
	p.collect()
	for _, e := range p.connected() {
		if p.now().Sub(e.seen) >= propHBTimout/3 {
			p.send(e, "heartbeat", "seq", "1", "running", p.heldList(e, 100, false))
		}
	}
}

func (p *prop) doSilence(victim *propExec) {
	for range 4 {
		p.h.advance(propHBTimout/4 + time.Millisecond)
		p.collect()
		for _, e := range p.connected() {
			if e != victim {
				p.send(e, "heartbeat", "seq", "1", "running", p.heldList(e, 100, false))
			}
		}
		p.collect()
	}
	require.Zero(p.t, victim.peer, "silent executor not lost")
	p.stats["lost"]++
}

func (p *prop) doRestart() {
	if p.lastSnap != nil && p.chance(50) {
		p.h.restartFrom(p.lastSnap, p.lastSnapN)
	} else {
		p.h.restart()
	}
	p.h.fx.dec.MaxFrame = propMaxFrame
	p.restarted = true
	for _, e := range p.execs {
		e.peer = 0
	}
	p.clients = []PeerID{p.h.client(), p.h.client()}
	clear(p.waits) // their connections are gone
	p.stats["restart"]++
}
