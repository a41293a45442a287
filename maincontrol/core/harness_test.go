package core

import (
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apollo11/apollo11/wire"
	"github.com/stretchr/testify/require"
)

// recorder is an Effects that keeps everything: records, frames (decoded,
// copied) per peer, closes.
type recorder struct {
	records [][]byte
	frames  map[PeerID][]*wire.Message
	// waits counts, by frame type, the frames sent with each Wait.
	waits map[string][3]int
	// gates holds, for each task frame (SendTask) in order, the record it
	// waits for: 1 is records[0].
	gates  []uint64
	closed map[PeerID]bool
	dec    wire.Decoder
}

func newRecorder() *recorder {
	return &recorder{frames: map[PeerID][]*wire.Message{}, closed: map[PeerID]bool{}, waits: map[string][3]int{}}
}

func (r *recorder) Record(p []byte) uint64 {
	r.records = append(r.records, slices.Clone(p))
	return uint64(len(r.records))
}

func (r *recorder) Send(peer PeerID, frame []byte, wait Wait) {
	owned := r.keep(peer, frame)
	counts := r.waits[owned.Type()]
	counts[wait]++
	r.waits[owned.Type()] = counts
}

func (r *recorder) SendTask(peer PeerID, frame []byte, after uint64) {
	if m := r.keep(peer, frame); m.Type() != "task" {
		panic(fmt.Sprintf("SendTask with %s", m))
	}
	if after > uint64(len(r.records)) {
		panic(fmt.Sprintf("task frame waits for record %d of %d", after, len(r.records)))
	}
	r.gates = append(r.gates, after)
}

// keep decodes and stores a frame sent to peer.
func (r *recorder) keep(peer PeerID, frame []byte) *wire.Message {
	m, n, err := r.dec.Decode(frame)
	if err != nil || n != len(frame) {
		panic(fmt.Sprintf("core sent a bad frame %q: %v", frame, err))
	}
	owned := m.Clone() // m borrows the core's frame buffer, which it reuses
	r.frames[peer] = append(r.frames[peer], owned)
	return owned
}
func (r *recorder) Close(peer PeerID) { r.closed[peer] = true }

type harness struct {
	t     testing.TB
	c     *Core
	fx    *recorder
	clock *ManualClock
	next  PeerID
	cfg   Config
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func newHarness(t testing.TB, mods ...func(*Config)) *harness {
	t.Helper()
	h := &harness{t: t, fx: newRecorder(), clock: &ManualClock{T: time.UnixMilli(1_700_000_000_000)}}
	h.cfg = Config{Clock: h.clock, Rand: rand.New(rand.NewPCG(1, 2)), Logger: quietLogger(),
		Nonce: func() string { return "0123456789abcdef0123456789abcdef" }}
	for _, m := range mods {
		m(&h.cfg)
	}
	c, err := New(h.cfg, h.fx)
	require.NoError(t, err)
	h.c = c
	return h
}

// msg builds a message from key, value pairs; the first value is the type.
func msg(typ string, kv ...string) *wire.Message {
	m := wire.NewMessage(wire.Kind(typ))
	for i := 0; i+1 < len(kv); i += 2 {
		m.Set(kv[i], kv[i+1])
	}
	return m
}

func (h *harness) open() PeerID {
	h.next++
	h.c.Open(h.next)
	h.expect(h.next, "welcome")
	return h.next
}

func (h *harness) client() PeerID {
	p := h.open()
	h.send(p, "hello", "req", "h")
	h.expect(p, "hello_ok")
	return p
}

func (h *harness) executor(id, types string, slots int) PeerID {
	p := h.open()
	h.send(p, "register", "executor_id", id, "task_types", types, "slots", fmt.Sprint(slots))
	h.expect(p, "registered")
	return p
}

func (h *harness) send(p PeerID, typ string, kv ...string) {
	h.t.Helper()
	h.c.Handle(p, msg(typ, kv...))
}

// expect pops the next frame for p and checks its type.
func (h *harness) expect(p PeerID, typ string) *wire.Message {
	h.t.Helper()
	fs := h.fx.frames[p]
	require.NotEmpty(h.t, fs, "no frame for peer %d, wanted %s", p, typ)
	m := fs[0]
	h.fx.frames[p] = fs[1:]
	require.Equal(h.t, typ, m.Type(), "frame %s", m)
	return m
}

func (h *harness) none(p PeerID) {
	h.t.Helper()
	require.Empty(h.t, h.fx.frames[p], "unexpected frames for peer %d", p)
}

func (h *harness) advance(d time.Duration) {
	h.clock.T = h.clock.T.Add(d)
	h.c.Tick()
}

func (h *harness) submit(p PeerID, kv ...string) uint64 {
	h.t.Helper()
	h.send(p, "submit", append([]string{"req", "s"}, kv...)...)
	m := h.expect(p, "submitted")
	id, err := m.Uint("task_id")
	require.NoError(h.t, err)
	return id
}

func (h *harness) state(id uint64) State {
	t := h.c.tasks.get(id)
	if t == nil {
		return 0
	}
	return t.state
}

// replayed builds a fresh core from every record so far.
func (h *harness) replayed() *Core {
	h.t.Helper()
	c, err := New(h.cfg, newRecorder())
	require.NoError(h.t, err)
	for i, r := range h.fx.records {
		require.NoError(h.t, c.ReplayRecord(r), "record %d", i)
	}
	return c
}

// dump renders the durable state canonically, for comparing cores.
func dump(c *Core) string {
	c.finishLoad()
	var b strings.Builder
	fmt.Fprintf(&b, "next=%d seq=%d statever=%d armed=%d counts=%v pending_bytes=%d retained_bytes=%d next_epoch=%d\n",
		c.nextID, c.seq, c.stateVer, c.armed, c.counts, c.pendingBytes, c.retainedBytes, c.nextEpoch)
	keys := make([]string, 0, len(c.state))
	for k := range c.state {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "state %s=%q\n", k, c.state[k])
	}
	var line []byte
	c.tasks.scan(0, 0, func(t *task) bool {
		line = appendTaskLine(line[:0], t)
		b.Write(line)
		return true
	})
	names := make([]string, 0, len(c.execs))
	for id := range c.execs {
		names = append(names, id)
	}
	slices.Sort(names)
	for _, id := range names {
		e := c.execs[id]
		var types []string
		for _, tt := range e.types {
			types = append(types, tt.name)
		}
		var ts []string
		for tid, a := range e.tasks.all() {
			ts = append(ts, fmt.Sprintf("%d.%d", tid, a.ver))
		}
		slices.Sort(ts)
		fmt.Fprintf(&b, "exec %s types=%v slots=%d load=%d tasks=%v\n", id, types, e.slots, e.load, ts)
	}
	tnames := make([]string, 0, len(c.types))
	for n := range c.types {
		tnames = append(tnames, n)
	}
	slices.Sort(tnames)
	fmt.Fprintf(&b, "paused %v\n", slices.Sorted(maps.Keys(c.paused)))
	dumpSchedules(&b, c)
	for _, n := range tnames {
		tt := c.types[n]
		fmt.Fprintf(&b, "type %q counts=%v paused=%v\n", n, tt.counts, tt.paused)
		for p := 9; p >= 0; p-- {
			var ids []uint64
			q := tt.queues[p]
			for i := 0; q != nil && i < q.n; i++ {
				if e := q.buf[(q.head+i)%len(q.buf)]; c.validEntry(e) {
					ids = append(ids, e.id)
				}
			}
			if len(ids) > 0 {
				fmt.Fprintf(&b, "queue %s p%d %v\n", n, p, ids)
			}
		}
	}
	// Dependents: only the waiting tasks, in release order. Stale entries
	// and their count depend on when lists were compacted, which a
	// snapshot (rebuilt from the waiting tasks) does not repeat.
	deps := make([]uint64, 0, c.dependents.len())
	c.dependents.each(func(d uint64, _ []uint64, _ int) { deps = append(deps, d) })
	slices.Sort(deps)
	for _, d := range deps {
		var ids []uint64
		for _, id := range c.dependents.of(d) {
			if c.isWaiting(id) {
				ids = append(ids, id)
			}
		}
		fmt.Fprintf(&b, "dependents %d %v\n", d, ids)
	}
	var ret []uint64
	for i := 0; i < c.retention.n; i++ {
		e := c.retention.buf[(c.retention.head+i)%len(c.retention.buf)]
		if t := c.endOf(e); t != nil {
			ret = append(ret, e.id)
		}
	}
	fmt.Fprintf(&b, "retention %v\n", ret)
	var rw []uint64
	for i := 0; i < c.retryWait.n; i++ {
		e := c.retryWait.buf[(c.retryWait.head+i)%len(c.retryWait.buf)]
		if t := c.tasks.get(e.id); t != nil && t.state == Retrying && t.flags&flagArmed == 0 {
			rw = append(rw, e.id)
		}
	}
	fmt.Fprintf(&b, "retrywait %v\n", rw)
	kk := make([]string, 0, len(c.keys))
	for k, id := range c.keys {
		kk = append(kk, fmt.Sprintf("%s=%d", k, id))
	}
	slices.Sort(kk)
	fmt.Fprintf(&b, "keys %v\n", kk)
	dumpRuns(&b, c)
	return b.String()
}

// appendTaskLine renders one task for dump, as
//
//	task %d v%d %s att=%d/%d type=%s prio=%d flags=%b due=%d seq=%d exec=%q trace=%q args=%q/%d key=%q err=%q out=%q/%d deps=%v created=%d updated=%d timeout=%d start=%d
//
// with strconv rather than fmt: the property test dumps often.
func appendTaskLine(b []byte, t *task) []byte {
	u := func(pre string, v uint64) { b = strconv.AppendUint(append(b, pre...), v, 10) }
	i := func(pre string, v int64) { b = strconv.AppendInt(append(b, pre...), v, 10) }
	q := func(pre, v string) { b = strconv.AppendQuote(append(b, pre...), v) }
	out, n := t.out()
	u("task ", t.id)
	u(" v", uint64(t.version))
	b = append(append(b, ' '), t.state.String()...)
	u(" att=", uint64(t.attempt))
	u("/", t.maxAttempts)
	b = append(append(b, " type="...), t.typ.name...)
	u(" prio=", uint64(t.priority))
	b = strconv.AppendUint(append(b, " flags="...), uint64(t.flags), 2)
	i(" due=", t.dueMs)
	u(" seq=", t.seq)
	q(" exec=", t.execID)
	q(" trace=", t.ownTrace())
	q(" args=", t.args)
	u("/", uint64(t.argKeys))
	q(" key=", t.key())
	q(" err=", t.errText())
	q(" out=", out)
	u("/", uint64(n))
	b = append(b, " deps=["...)
	for j, d := range depsOf(t) {
		if j > 0 {
			b = append(b, ' ')
		}
		b = strconv.AppendUint(b, d, 10)
	}
	b = append(b, ']')
	i(" created=", t.createdMs)
	i(" updated=", t.updatedMs)
	u(" timeout=", t.timeoutMs)
	if n := t.requeues(); n > 0 {
		u(" requeues=", n)
		q(" reason=", t.requeueReason())
	}
	u(" start=", uint64(t.startOff))
	for k, v := range t.fields().all() {
		q(" "+k+"=", v)
	}
	return append(b, '\n')
}
