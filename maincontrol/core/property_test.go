package core

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apollo11/apollo11/wire"
	"github.com/stretchr/testify/require"
)

// A property test: random sequences of client, executor and clock inputs,
// with the core's invariants checked after every step and its log replayed
// against it every so often.

const (
	propMaxFrame = 4096
	// propMaxPendingBytes is reached now and then; MaxPending (150) hardly.
	propMaxPendingBytes = 1500
	// propRetentionMaxBytes binds more often than RetentionMax (60).
	propRetentionMaxBytes = 2000
	propHBTimout          = 6 * time.Second
)

type propExec struct {
	name  string
	types []string
	slots int
	peer  PeerID // 0 while not connected
	// held: the dispatches it believes it runs (task frames received,
	// minus results sent and cancels received), id -> version.
	held map[uint64]uint64
	seen time.Time // last frame it sent
}

// seenTask is what the checks last saw of one task.
type seenTask struct {
	version  uint64
	terminal State // 0 until seen terminal
	dropped  bool
}

type tokenKey struct {
	id  uint64
	ver uint64
}

type prop struct {
	t       *testing.T
	h       *harness
	rnd     *rand.Rand
	execs   []*propExec
	clients []PeerID
	keys    []string

	maxSent    map[uint64]uint64   // highest version in a task frame, per task
	seen       []seenTask          // per task id, what the checks saw last
	accepted   map[tokenKey]int    // accepted results per dispatch
	succeeded  map[uint64]int      // accepted succeeded results per task
	sentStatus map[tokenKey]string // status of the last result sent per dispatch
	waits      map[uint64]int      // done frames still owed, per task
	nextID     uint64
	restarted  bool
	lastSnap   [][]byte
	lastSnapN  int
	incr       *incrCheck
	step       int
	stats      map[string]int
	loads      map[string]int // executors' loads at the last check
}

func newProp(t *testing.T, seed uint64) *prop {
	h := newHarness(t, func(c *Config) {
		c.Rand = rand.New(rand.NewPCG(seed, seed^0x5eed))
		c.MaxFrame = propMaxFrame
		c.HeartbeatTimeout = propHBTimout
		c.HeartbeatInterval = propHBTimout / 3
		c.StartTimeout = 3 * time.Second
		c.MaxPending = 150
		c.MaxPendingBytes = propMaxPendingBytes
		c.RetentionMax = 60
		c.RetentionMaxBytes = propRetentionMaxBytes
		c.Retention = 2 * time.Minute
		c.MaxRetrying = 4
		c.RetryCap = 5 * time.Second
	})
	h.fx.dec.MaxFrame = propMaxFrame // the core never sends a larger frame
	p := &prop{t: t, h: h, rnd: rand.New(rand.NewPCG(seed, 77)),
		maxSent: map[uint64]uint64{}, accepted: map[tokenKey]int{}, succeeded: map[uint64]int{},
		sentStatus: map[tokenKey]string{}, waits: map[uint64]int{}, stats: map[string]int{}, loads: map[string]int{}}
	typeSets := [][]string{{"a"}, {"a", "b"}, {"b", "c"}, {"c"}, {"a", "b", "c"}}
	for i, ts := range typeSets {
		p.execs = append(p.execs, &propExec{name: fmt.Sprintf("e%d", i), types: ts, slots: 1 + i%3,
			held: map[uint64]uint64{}})
	}
	for i := range 12 {
		p.keys = append(p.keys, fmt.Sprintf("key%d", i))
	}
	p.clients = []PeerID{h.client(), h.client()}
	return p
}

func (p *prop) now() time.Time { return p.h.clock.T }

func (p *prop) connected() []*propExec {
	var es []*propExec
	for _, e := range p.execs {
		if e.peer != 0 {
			es = append(es, e)
		}
	}
	return es
}

func (p *prop) pick(n int) int { return p.rnd.IntN(n) }

func (p *prop) chance(pct int) bool { return p.rnd.IntN(100) < pct }

// heldList renders the tokens e believes it runs, each kept with
// probability keepPct, plus sometimes one it never had.
func (p *prop) heldList(e *propExec, keepPct int, junk bool) string {
	ids := make([]uint64, 0, len(e.held))
	for id := range e.held {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var items []string
	for _, id := range ids {
		if p.chance(keepPct) {
			items = append(items, fmt.Sprintf("%d.%d", id, e.held[id]))
		}
	}
	if junk {
		items = append(items, fmt.Sprintf("%d.%d", 1+p.rnd.Uint64N(p.h.c.nextID+3), p.rnd.IntN(4)))
	}
	return strings.Join(items, ",")
}

func (p *prop) send(e *propExec, typ string, kv ...string) {
	e.seen = p.now()
	p.h.send(e.peer, typ, kv...)
}

// collect takes every frame the core sent and checks it.
func (p *prop) collect() {
	t := p.t
	for _, e := range p.execs {
		if e.peer == 0 {
			continue
		}
		for _, m := range p.h.drain(e.peer) {
			switch m.Type() {
			case "task":
				id, ver := tokenOf(t, m)
				require.Greater(t, ver, p.maxSent[id], "task %d: versions strictly increase", id)
				p.maxSent[id] = ver
				require.Contains(t, e.types, m.Value("task_type"), "sent to an executor of its type")
				att, err := m.Uint("attempt")
				require.NoError(t, err)
				maxAtt, err := m.Uint("max_attempts")
				require.NoError(t, err)
				require.True(t, att >= 1 && att <= maxAtt, "attempt %d of %d", att, maxAtt)
				e.held[id] = ver
				p.stats["dispatch"]++
			case "cancel":
				id, ver := tokenOf(t, m)
				if e.held[id] == ver {
					delete(e.held, id)
				}
			case "result_ack":
				id, ver := tokenOf(t, m)
				k := tokenKey{id, ver}
				if m.Value("accepted") == "true" {
					p.accepted[k]++
					require.Equal(t, 1, p.accepted[k], "one accepted result per dispatch %d.%d", id, ver)
					if p.sentStatus[k] == "succeeded" {
						p.succeeded[id]++
						require.Equal(t, 1, p.succeeded[id], "one accepted success per task %d", id)
					}
				}
			case "error":
				t.Fatalf("step %d: error to executor %s: %s", p.step, e.name, m)
			}
		}
		if p.h.fx.closed[e.peer] {
			e.peer = 0 // lost, bye or duplicate: the core closed it
		}
	}
	for _, cl := range p.clients {
		for _, m := range p.h.drain(cl) {
			switch m.Type() {
			case "done":
				id, err := m.Uint("task_id")
				require.NoError(t, err)
				require.Positive(t, p.waits[id], "done for task %d that nobody waits for", id)
				p.waits[id]--
				st, ok := ParseState(m.Value("state"))
				require.True(t, ok)
				require.True(t, st.Terminal(), "done with state %s", st)
				if tk := p.h.c.tasks.get(id); tk != nil {
					require.Equal(t, tk.state, st)
				}
				p.stats["done"]++
			case "error":
				code := wire.Code(m.Value("code"))
				require.Contains(t, []wire.Code{wire.CodeQueueFull, wire.CodeBadRequest, wire.CodeUnknownTask,
					wire.CodeIllegalTransition}, code, "step %d: %s", p.step, m)
				p.stats["err:"+string(code)]++
			}
		}
		require.False(t, p.h.fx.closed[cl], "a client was closed")
	}
}

// check verifies the invariants after a step. (Plain ifs: it runs for
// every task after every step.)
func (p *prop) check() {
	t := p.t
	c := p.h.c
	if err := checkInvariants(c, p.loads); err != nil {
		t.Fatalf("step %d: %v", p.step, err)
	}
	if c.nextID < p.nextID {
		t.Fatalf("step %d: the id counter went back from %d to %d", p.step, p.nextID, c.nextID)
	}
	p.nextID = c.nextID
	for uint64(len(p.seen)) < c.nextID {
		p.seen = append(p.seen, seenTask{})
	}
	for id := uint64(1); id < c.nextID; id++ {
		s := &p.seen[id]
		tk := c.tasks.get(id)
		if tk == nil {
			s.dropped = true
			continue
		}
		if s.dropped {
			t.Fatalf("step %d: task %d came back after it was dropped", p.step, id)
		}
		if tk.version < s.version {
			t.Fatalf("step %d: task %d: version went back from %d to %d", p.step, id, s.version, tk.version)
		}
		s.version = tk.version
		if s.terminal != 0 {
			if tk.state != s.terminal {
				t.Fatalf("step %d: task %d left terminal %s for %s", p.step, id, s.terminal, tk.state)
			}
		} else if tk.state.Terminal() {
			s.terminal = tk.state
			if p.waits[id] != 0 {
				t.Fatalf("step %d: task %d ended without its done", p.step, id)
			}
		}
	}
}

func (p *prop) checkReplay() {
	p.t.Helper()
	live, replayed := dump(p.h.c), dump(p.h.replayed())
	if p.restarted {
		// The deadline a restored running task gets when it is listed is
		// live state, not in the log.
		var ids []uint64
		p.h.c.tasks.scan(0, Running, func(t *task) bool { ids = append(ids, t.id); return true })
		live, replayed = maskDue(live, ids...), maskDue(replayed, ids...)
	}
	require.Equal(p.t, live, replayed, "step %d: replay", p.step)
}

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
		case k == "task_type" || k == "key" || k == "trace_id":
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

func (p *prop) stepOnce() {
	h, c := p.h, p.h.c
	r := p.pick(1000)
	conn := p.connected()
	var e *propExec
	if len(conn) > 0 {
		e = conn[p.pick(len(conn))]
	}
	switch {
	case r < 200:
		p.doSubmit()
	case r < 330 && e != nil:
		p.doStarted(e)
	case r < 530 && e != nil:
		p.doResult(e)
	case r < 560 && e != nil:
		id, ver := p.randomToken(e)
		p.send(e, "progress", "task_id", strconv.FormatUint(id, 10), "version", strconv.FormatUint(uint64(ver), 10), "percent", "50")
	case r < 660 && e != nil:
		p.send(e, "heartbeat", "seq", "1", "running", p.heldList(e, 90, p.chance(5)))
	case r < 665 && e != nil:
		p.doSilence(e)
	case r < 675 && e != nil:
		p.send(e, "bye")
		clear(e.held)
		p.stats["bye"]++
	case r < 690 && e != nil:
		c.Closed(e.peer)
		e.peer = 0
		p.stats["disconnect"]++
	case r < 760:
		p.doRegister(p.execs[p.pick(len(p.execs))])
	case r < 900:
		p.doTick(time.Duration(1+p.pick(2500)) * time.Millisecond)
	case r < 950:
		cl := p.clients[p.pick(len(p.clients))]
		h.send(cl, "cancel", "req", "c", "task_id", strconv.FormatUint(1+p.rnd.Uint64N(c.nextID+1), 10))
	case r < 975:
		var before string
		if p.chance(25) {
			before = dump(c)
		}
		nrec := len(h.fx.records)
		cl := p.clients[p.pick(len(p.clients))]
		h.send(cl, "query", "req", "q", "task_id", strconv.FormatUint(1+p.rnd.Uint64N(c.nextID), 10))
		h.send(cl, "list", "req", "l", "state", AllStates[p.pick(NumStates)].String(), "limit", "1000")
		h.send(cl, "stats", "req", "st")
		h.send(cl, "state_get", "req", "g")
		if before != "" {
			require.Equal(p.t, before, dump(c), "reads change nothing")
		}
		require.Len(p.t, h.fx.records, nrec)
	case r < 992:
		p.lastSnap = snapshotEntries(p.t, c)
		p.lastSnapN = len(h.fx.records)
		require.Equal(p.t, dump(c), dump(h.loaded(p.lastSnap, nil)), "step %d: snapshot", p.step)
		p.writeIncremental()
		p.stats["snapshot"]++
	case r < 995:
		p.doRestart()
	default:
		p.doTick(time.Duration(p.pick(60)) * time.Second) // long: retention, lost executors
	}
	p.collect()
}

func TestCore_Property(t *testing.T) {
	seeds, steps := uint64(6), 3000
	if raceEnabled {
		seeds, steps = 4, 2000
	}
	if testing.Short() {
		steps = 500
	}
	for seed := uint64(1); seed <= seeds; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			p := newProp(t, seed)
			for p.step = 1; p.step <= steps; p.step++ {
				p.stepOnce()
				p.check()
				if p.step%500 == 0 {
					p.checkReplay()
				}
			}
			p.checkReplay()
			t.Logf("tasks %d, records %d, %v", p.h.c.nextID-1, len(p.h.fx.records), p.stats)
		})
	}
}

// hasStateKeys reports whether a result carries state changes.
func hasStateKeys(m *wire.Message) bool {
	for range m.WithPrefix(wire.PrefixState) {
		return true
	}
	return false
}
