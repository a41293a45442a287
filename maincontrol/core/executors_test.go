package core

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apollo11/apollo11/internal/syncbuf"
	"github.com/apollo11/apollo11/wire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Scenario tests for the executor rules of spec section 4.

func TestCore_Register(t *testing.T) {
	h := newHarness(t)
	p := h.open()
	h.send(p, "register", "executor_id", "ex-1:a.b_C", "task_types", "a,b")
	m := h.expect(p, "registered")
	assert.Equal(t, "ex-1:a.b_C", m.Value("executor_id"))
	assert.Equal(t, "5000", m.Value("heartbeat_ms"))
	assert.Equal(t, "15000", m.Value("timeout_ms"))
	assert.Equal(t, "0", m.Value("state_version"))
	e := h.c.execs["ex-1:a.b_C"]
	require.NotNil(t, e)
	assert.Equal(t, 1, e.slots, "slots default to 1")
	require.Len(t, e.types, 2)
	assert.Equal(t, "a", e.types[0].name)
	assert.Equal(t, "b", e.types[1].name)

	h = newHarness(t, func(c *Config) { c.HeartbeatTimeout = 9 * time.Second; c.HeartbeatInterval = 2 * time.Second })
	p = h.executor("e1", "a", 65536)
	_ = p
	assert.Equal(t, 65536, h.c.execs["e1"].slots)
}

// An absent task_types is an empty list (spec section 3): the executor
// registers and gets no tasks.
func TestCore_RegisterWithoutTypes(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	h.submit(cl, "task_type", "x")
	for _, kv := range [][]string{{"executor_id", "e1"}, {"executor_id", "e2", "task_types", ""}} {
		p := h.open()
		h.send(p, "register", kv...)
		h.expect(p, "registered")
		assert.Empty(t, h.c.execs[kv[1]].types, kv[1])
		h.none(p)
	}
	assert.Equal(t, Pending, h.state(1))
	h.checkReplay()
}

// An executor back with fewer slots than the dispatches it still holds
// keeps them (they end as usual) and gets no task until it is under its
// new slots.
func TestCore_ReregisterFewerSlots(t *testing.T) {
	var buf syncbuf.Buffer
	h := newHarness(t, withLog(&buf))
	cl, ex, a, b := holdingTwo(h)
	h.start(ex, b, 1)
	h.c.Closed(ex)
	ex = h.executor("e1", "x", 1)
	assert.Contains(t, buf.String(), `msg="executor holds more tasks than its new slots" executor=e1 slots=1 tasks=2`)
	c := h.submit(cl, "task_type", "x")
	h.none(ex)
	h.accepted(ex, a, 1, "succeeded")
	h.none(ex) // 1 held, 1 slot: still full
	assert.Equal(t, Pending, h.state(c))
	h.accepted(ex, b, 1, "succeeded")
	id, _ := h.task(ex)
	assert.Equal(t, c, id, "dispatched once under its slots")
	require.NoError(t, checkInvariants(h.c, map[string]int{}))
	h.checkReplay()
}

func TestCore_RegisterBadValues(t *testing.T) {
	bad := [][]string{
		{"task_types", "a"},                                          // no executor_id
		{"executor_id", "", "task_types", "a"},                       // empty id
		{"executor_id", "has space", "task_types", "a"},              //
		{"executor_id", "slash/", "task_types", "a"},                 //
		{"executor_id", strings.Repeat("e", 129), "task_types", "a"}, // too long
		{"executor_id", "e1", "task_types", "a,,b"},                  //
		{"executor_id", "e1", "task_types", "a", "slots", "0"},       //
		{"executor_id", "e1", "task_types", "a", "slots", "65537"},   //
		{"executor_id", "e1", "task_types", "a", "slots", "x"},       //
		{"executor_id", "e1", "task_types", "a", "slots", "-1"},      //
	}
	for _, kv := range bad {
		t.Run(fmt.Sprint(kv), func(t *testing.T) {
			h := newHarness(t)
			p := h.open()
			h.send(p, "register", kv...)
			e := h.expectErr(p, wire.CodeBadRequest)
			assert.False(t, e.Has("req"))
			assert.False(t, h.fx.closed[p], "the peer may try again")
			assert.Empty(t, h.c.execs)
			assert.Empty(t, h.fx.records)
			// The handshake is not complete: a heartbeat is not_registered.
			// First, a good register completes it.
			h.send(p, "register", "executor_id", "e1", "task_types", "a", "slots", "2")
			h.expect(p, "registered")
			assert.Equal(t, 2, h.c.execs["e1"].slots)
		})
	}
	t.Run("not complete", func(t *testing.T) {
		h := newHarness(t)
		p := h.open()
		h.send(p, "register", "executor_id", "e1", "task_types", "a", "slots", "0")
		h.expectErr(p, wire.CodeBadRequest)
		h.send(p, "heartbeat", "seq", "1")
		h.expectErr(p, wire.CodeNotRegistered)
		assert.True(t, h.fx.closed[p])
	})
	t.Run("max id length", func(t *testing.T) {
		h := newHarness(t)
		h.executor(strings.Repeat("e", 128), "a", 1)
	})
}

func TestCore_DuplicateExecutor(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	live := h.executor("e1", "x", 1)
	dup := h.open()
	h.send(dup, "register", "executor_id", "e1", "task_types", "x,y", "slots", "5")
	h.expectErr(dup, wire.CodeDuplicateExecutor)
	assert.True(t, h.fx.closed[dup])
	assert.False(t, h.fx.closed[live])
	e := h.c.execs["e1"]
	assert.Equal(t, live, e.peer)
	assert.Equal(t, 1, e.slots, "the live registration is not affected")
	require.Len(t, e.types, 1)
	// The live one still works.
	id := h.submit(cl, "task_type", "x")
	h.task(live)
	h.heartbeat(live, "")
	h.start(live, id, 1)
	h.accepted(live, id, 1, "succeeded")
	h.none(dup)
	h.checkReplay()
}

// holdingTwo connects a client and executor e1 (type x, 2 slots) and
// gives e1 two tasks: a running, b dispatched.
func holdingTwo(h *harness) (cl, ex PeerID, a, b uint64) {
	cl = h.client()
	ex = h.executor("e1", "x", 2)
	a = h.submit(cl, "task_type", "x")
	b = h.submit(cl, "task_type", "x")
	h.task(ex)
	h.task(ex)
	h.start(ex, a, 1)
	return cl, ex, a, b
}

func TestCore_ReRegisterKeepsTasks(t *testing.T) {
	h := newHarness(t)
	cl, ex, a, b := holdingTwo(h)
	h.c.Closed(ex)
	h.advance(2 * time.Second)
	assert.Equal(t, Running, h.state(a))
	assert.Equal(t, Dispatched, h.state(b))
	// A task submitted while it is away is not sent to it.
	c := h.submit(cl, "task_type", "x")
	ex2 := h.executor("e1", "x", 2)
	h.none(ex2)
	assert.Equal(t, Pending, h.state(c))
	assert.Equal(t, 2, h.c.execs["e1"].load)
	h.heartbeat(ex2, fmt.Sprintf("%d.1,%d.1", a, b))
	h.accepted(ex2, a, 1, "succeeded")
	id, _ := h.task(ex2) // the freed slot
	assert.Equal(t, c, id)
	h.accepted(ex2, b, 1, "succeeded") // b was listed: running
	h.checkReplay()
}

func TestCore_HeartbeatPong(t *testing.T) {
	h := newHarness(t)
	ex := h.executor("e1", "x", 1)
	h.send(ex, "heartbeat", "seq", "7", "running", "")
	assert.Equal(t, "7", h.expect(ex, "pong").Value("seq"))
	h.send(ex, "heartbeat", "seq", "8") // an absent list is an empty one
	assert.Equal(t, "8", h.expect(ex, "pong").Value("seq"))
	h.send(ex, "heartbeat", "seq", "1") // not checked
	h.expect(ex, "pong")
	// A version up to 2^64-1 is well formed: no such dispatch, so a cancel.
	h.send(ex, "heartbeat", "seq", "2", "running", "1.18446744073709551615")
	h.expect(ex, "pong")
	assert.Equal(t, "18446744073709551615", h.expect(ex, "cancel").Value("version"))
	for _, kv := range [][]string{{}, {"seq", "x"}, {"seq", "1", "running", "1"}, {"seq", "1", "running", "1.x"},
		{"seq", "1", "running", "1.1,,2.1"}, {"seq", "1", "running", "1.18446744073709551616"}} {
		h.send(ex, "heartbeat", kv...)
		h.expectErr(ex, wire.CodeBadRequest)
	}
	assert.False(t, h.fx.closed[ex])
}

func TestCore_ExecutorLost(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.StartTimeout = time.Hour }) // b stays dispatched
	cl := h.client()
	ex := h.executor("e1", "x", 2)
	a := h.submit(cl, "task_type", "x") // will be running
	h.task(ex)
	h.start(ex, a, 1)
	b := h.submit(cl, "task_type", "x") // stays dispatched
	h.task(ex)

	// Any frame counts as life.
	h.advance(10 * time.Second)
	h.send(ex, "progress", "task_id", itoa(a), "version", "1", "percent", "50", "note", "half")
	h.advance(14 * time.Second)
	assert.False(t, h.fx.closed[ex])
	h.send(ex, "state_get", "req", "s")
	h.expect(ex, "state")
	h.advance(15*time.Second - time.Millisecond)
	assert.False(t, h.fx.closed[ex])
	// Only ticks that start the timeout are no life.
	h.advance(time.Millisecond)
	assert.True(t, h.fx.closed[ex], "lost: connection closed")
	assert.NotContains(t, h.c.execs, "e1")
	assert.Equal(t, Retrying, h.state(a), "running: retried")
	assert.Equal(t, Pending, h.state(b), "dispatched: back to pending")
	assert.Equal(t, uint32(1), h.get(b).attempt)
	h.checkReplay()

	// It registers again to come back.
	ex2 := h.executor("e1", "x", 2)
	m := h.expect(ex2, "task")
	assert.Equal(t, itoa(b), m.Value("task_id"))
	assert.Equal(t, "1", m.Value("attempt"), "no attempt used")
	h.advance(time.Second)
	m = h.expect(ex2, "task")
	assert.Equal(t, itoa(a), m.Value("task_id"))
	assert.Equal(t, "2", m.Value("attempt"))
	h.checkReplay()
}

func TestCore_DisconnectedExecutorLost(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.HeartbeatTimeout = 3 * time.Second; c.HeartbeatInterval = time.Second })
	cl := h.client()
	ex := h.executor("e1", "x", 1)
	a := h.submit(cl, "task_type", "x")
	h.task(ex)
	h.start(ex, a, 1)
	h.c.Closed(ex)
	h.advance(3 * time.Second)
	assert.NotContains(t, h.c.execs, "e1")
	assert.Equal(t, Retrying, h.state(a))
	h.checkReplay()
}

func TestCore_Bye(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	ex := h.executor("e1", "x", 3)
	a := h.submit(cl, "task_type", "x")                      // dispatched
	b := h.submit(cl, "task_type", "x")                      // running, attempts left
	c := h.submit(cl, "task_type", "x", "max_attempts", "1") // running, last attempt
	for range 3 {
		h.task(ex)
	}
	h.start(ex, b, 1)
	h.start(ex, c, 1)
	h.send(ex, "bye", "reason", "shutdown")
	h.expect(ex, "bye_ack")
	assert.True(t, h.fx.closed[ex])
	assert.NotContains(t, h.c.execs, "e1")
	assert.Equal(t, Pending, h.state(a))
	assert.Equal(t, Pending, h.state(b), "running: through retrying to pending, no delay")
	assert.Equal(t, Failed, h.state(c), "attempts used up")
	assert.Equal(t, uint32(1), h.get(b).attempt)
	h.checkReplay()

	ex2 := h.executor("e2", "x", 3)
	got := map[string]string{}
	for range 2 {
		m := h.expect(ex2, "task")
		got[m.Value("task_id")] = m.Value("attempt")
	}
	assert.Equal(t, map[string]string{itoa(a): "1", itoa(b): "2"}, got)
	h.checkReplay()
}

func TestCore_ExecutorMessagesChecked(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	ex := h.executor("e1", "x", 1)
	a := h.submit(cl, "task_type", "x")
	h.task(ex)
	before := dump(h.c)
	for _, kv := range [][]string{
		{"started"},
		{"started", "task_id", "1"},
		{"started", "task_id", "x", "version", "1"},
		{"result", "task_id", "1", "version", "1"},
		{"result", "task_id", "1", "version", "1", "status", "done"},
		{"result", "task_id", "1", "version", "1", "status", "failed", "retryable", "maybe"},
		{"progress", "task_id", "1", "version", "1"},
		{"progress", "task_id", "1", "version", "1", "percent", "101"},
	} {
		h.send(ex, kv[0], kv[1:]...)
		h.expectErr(ex, wire.CodeBadRequest)
	}
	assert.Equal(t, before, dump(h.c))
	// A started that does not match the current dispatch is ignored.
	for _, kv := range [][]string{{"task_id", "1", "version", "2"}, {"task_id", "1", "version", "0"},
		{"task_id", "9", "version", "1"}, {"task_id", "1", "version", "99999999999"}} {
		h.send(ex, "started", kv...)
		h.none(ex)
	}
	assert.Equal(t, before, dump(h.c))
	// Progress is informational, even for a dispatch that is not current.
	h.send(ex, "progress", "task_id", itoa(a), "version", "1", "percent", "100")
	h.send(ex, "progress", "task_id", "99", "version", "1", "percent", "0")
	h.none(ex)
	assert.Equal(t, before, dump(h.c))
}

// A task type is kept while a known task or a registered executor names
// it, and forgotten after: names seen once do not stay in memory.
func TestCore_TypesForgottenWhenUnused(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.RetentionMax = 1 })
	cl := h.client()
	for i := range 50 {
		id := h.submit(cl, "task_type", "once-"+strconv.Itoa(i))
		h.send(cl, "cancel", "req", "c", "task_id", strconv.FormatUint(id, 10))
		h.expect(cl, "cancelled")
	}
	h.advance(time.Second) // retention runs on the tick
	assert.Len(t, h.c.types, 1, "only the type of the one task retention keeps")

	ex := h.executor("e1", "a,b,a,b,c", 1)
	require.Len(t, h.c.execs["e1"].types, 3, "a type listed twice counts once")
	assert.Len(t, h.c.types, 4)
	h.c.Closed(ex) // and back, serving other types
	ex = h.executor("e1", "b,d", 1)
	assert.ElementsMatch(t, []string{"b", "d"}, typeNames(h.c.execs["e1"].types))
	assert.Len(t, h.c.types, 3, "a and c went with the old registration")
	h.send(ex, "bye")
	assert.Len(t, h.c.types, 1, "the executor's types went with it")
	require.Equal(t, dump(h.c), dump(h.replayed()))
}

func typeNames(tts []*taskType) []string {
	var names []string
	for _, tt := range tts {
		names = append(names, tt.name)
	}
	return names
}

// Time the core could not run (Stalled) is not an executor's silence: its
// frames may have waited unread all along.
func TestCore_StallIsNotSilence(t *testing.T) {
	h := newHarness(t)
	ex := h.executor("e1", "x", 1)
	h.advance(10 * time.Second)
	h.c.Stalled(10 * time.Second)
	h.advance(14 * time.Second) // 24 s since its last frame, 14 s of them heard
	assert.False(t, h.fx.closed[ex], "not lost while the stall is credited")
	assert.Contains(t, h.c.execs, "e1")
	h.advance(time.Second) // 15 s of silence the core could have heard
	assert.True(t, h.fx.closed[ex], "lost once the timeout is spent outside stalls")
	assert.NotContains(t, h.c.execs, "e1")
}

// An executor registers at most wire.MaxExecutorTypes different types: each
// load change moves it in every one of their heaps.
func TestCore_RegisterTypesCapped(t *testing.T) {
	h := newHarness(t)
	list := func(n, distinct int) string {
		var names []string
		for i := range n {
			names = append(names, "t"+strconv.Itoa(i%distinct))
		}
		return strings.Join(names, ",")
	}
	p := h.open()
	h.send(p, "register", "executor_id", "many", "task_types", list(wire.MaxExecutorTypes+1, wire.MaxExecutorTypes+1), "slots", "1")
	e := h.expectErr(p, wire.CodeBadRequest)
	assert.Contains(t, e.Value("message"), "task_types: more than 1024 types")
	assert.NotContains(t, h.c.execs, "many")
	assert.Empty(t, h.c.types)

	h.send(p, "register", "executor_id", "many", "task_types", list(3*wire.MaxExecutorTypes, wire.MaxExecutorTypes), "slots", "1")
	h.expect(p, "registered")
	assert.Len(t, h.c.execs["many"].types, wire.MaxExecutorTypes, "repeats do not count")
}
