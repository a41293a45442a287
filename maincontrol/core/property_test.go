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
	terminal State  // 0 until seen terminal
	requeues uint64 // its requeues when last seen
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
	// Schedules fire from ticks: replay, snapshots and restarts cover them.
	h.addSched(p.clients[0], "name", "tick", "cron", "*/10 * * * * *", "task_type", "a")
	h.addSched(p.clients[0], "name", "late", "cron", "*/30 * * * * *", "task_type", "b",
		"missed", "catch_up", "jitter_ms", "4000")
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
					wire.CodeIllegalTransition, wire.CodeUnknownRun}, code, "step %d: %s", p.step, m)
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
		if n := tk.requeues(); n != s.requeues { // a requeue leaves a terminal state
			s.requeues, s.terminal = n, 0
		}
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

func (p *prop) stepOnce() {
	h, c := p.h, p.h.c
	r := p.pick(1000)
	conn := p.connected()
	var e *propExec
	if len(conn) > 0 {
		e = conn[p.pick(len(conn))]
	}
	switch {
	case r < 180:
		p.doSubmit()
	case r < 200:
		p.doRun()
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
	case r < 935:
		cl := p.clients[p.pick(len(p.clients))]
		h.send(cl, "cancel", "req", "c", "task_id", strconv.FormatUint(1+p.rnd.Uint64N(c.nextID+1), 10))
	case r < 950:
		cl := p.clients[p.pick(len(p.clients))]
		h.send(cl, "requeue", "req", "rq", "task_id", strconv.FormatUint(1+p.rnd.Uint64N(c.nextID+1), 10))
		p.stats["requeue"]++
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
			require.Positive(t, p.h.c.scheds["tick"].fires, "the schedules fired")
			t.Logf("tasks %d, records %d, %v, schedule firings %d", p.h.c.nextID-1, len(p.h.fx.records), p.stats,
				p.h.c.scheds["tick"].fires+p.h.c.scheds["late"].fires)
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
