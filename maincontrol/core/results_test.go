package core

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apollo11/apollo11/wire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Scenario tests for results, retries, shared state and dependencies.

func TestCore_BackoffBounds(t *testing.T) {
	for seed := uint64(1); seed <= 8; seed++ {
		h := newHarness(t, func(c *Config) { c.Rand = rand.New(rand.NewPCG(seed, seed*7)) })
		lo, hi := map[uint32]time.Duration{}, map[uint32]time.Duration{}
		for n := uint32(1); n <= 40; n++ {
			full := min(60*time.Second, time.Duration(1<<min(n-1, 20))*time.Second)
			for range 200 {
				d := h.c.backoff(n)
				require.GreaterOrEqual(t, d, full/2, "n=%d", n)
				require.LessOrEqual(t, d, full, "n=%d", n)
				if lo[n] == 0 || d < lo[n] {
					lo[n] = d
				}
				hi[n] = max(hi[n], d)
			}
			// The factor is random: 200 draws spread over most of [0.5, 1].
			assert.Less(t, lo[n], full*6/10, "n=%d", n)
			assert.Greater(t, hi[n], full*9/10, "n=%d", n)
		}
		assert.LessOrEqual(t, hi[1], time.Second)
		assert.GreaterOrEqual(t, lo[7], 30*time.Second, "2^6 s is capped at 60 s")
	}
}

// The delay of a retry, observed end to end: after attempt n failed the
// task is pending again within [0.5, 1] x min(60 s, 2^(n-1) s).
func TestCore_RetryDelay(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		h := newHarness(t, func(c *Config) {
			c.Rand = rand.New(rand.NewPCG(seed, 99))
			c.HeartbeatTimeout = 10 * time.Minute
		})
		cl := h.client()
		ex := h.executor("e1", "x", 1)
		id := h.submit(cl, "task_type", "x", "max_attempts", "9")
		for n := 1; n <= 8; n++ {
			_, v := h.task(ex)
			h.start(ex, id, v)
			h.accepted(ex, id, v, "failed")
			full := min(60*time.Second, time.Duration(1<<(n-1))*time.Second)
			due := time.Duration(h.get(id).dueMs-h.c.now()) * time.Millisecond
			require.GreaterOrEqual(t, due, full/2, "attempt %d", n)
			require.LessOrEqual(t, due, full, "attempt %d", n)
			h.advance(due - time.Millisecond)
			require.Equal(t, Retrying, h.state(id))
			h.heartbeat(ex, "")
			h.advance(time.Millisecond)
		}
		h.checkReplay()
	}
}

func TestCore_RetryCap(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxRetrying = 2 })
	cl := h.client()
	ex := h.executor("e1", "x", 4)
	ids := make([]uint64, 4)
	for i := range ids {
		ids[i] = h.submit(cl, "task_type", "x")
		h.task(ex)
		h.start(ex, ids[i], 1)
	}
	for _, id := range ids {
		h.accepted(ex, id, 1, "failed")
	}
	for _, id := range ids {
		require.Equal(t, Retrying, h.state(id))
	}
	armed := func(id uint64) bool { return h.get(id).flags&flagArmed != 0 }
	assert.True(t, armed(ids[0]))
	assert.True(t, armed(ids[1]))
	assert.False(t, armed(ids[2]), "beyond the cap: waits its turn")
	assert.False(t, armed(ids[3]))
	assert.Zero(t, h.get(ids[2]).dueMs, "no backoff timer while it waits")
	assert.Equal(t, 2, h.c.armed)
	h.checkReplay()

	// Cancelling an armed one lets the next start its backoff now.
	h.send(cl, "cancel", "req", "c", "task_id", itoa(ids[0]))
	h.expect(cl, "cancelled")
	assert.True(t, armed(ids[2]))
	start := h.c.now()
	due := h.get(ids[2]).dueMs
	assert.GreaterOrEqual(t, due-start, int64(500))
	assert.LessOrEqual(t, due-start, int64(1000))
	assert.False(t, armed(ids[3]))
	h.checkReplay()

	// ids[1]'s backoff ends: it goes to pending, and ids[3] starts its
	// backoff from then.
	d1 := h.get(ids[1]).dueMs
	h.clock.T = time.UnixMilli(min(d1, due))
	h.c.Tick()
	h.clock.T = time.UnixMilli(max(d1, due))
	h.c.Tick()
	require.True(t, armed(ids[3]))
	assert.Equal(t, 1, h.c.armed)
	assert.GreaterOrEqual(t, h.get(ids[3]).dueMs-min(d1, due), int64(500))
	h.advance(time.Second)
	assert.Zero(t, h.c.armed)
	for _, id := range ids[1:] {
		assert.Equal(t, Running, h.stateOrStart(ex, id))
	}
	h.checkReplay()
}

// stateOrStart starts id if a task frame for it is queued; returns its state.
func (h *harness) stateOrStart(ex PeerID, id uint64) State {
	for _, m := range h.fx.frames[ex] {
		if m.Type() == "task" && m.Value("task_id") == itoa(id) {
			v, _ := m.Uint("version")
			h.start(ex, id, v)
		}
	}
	return h.state(id)
}

func TestCore_RetryCapNone(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxRetrying = -1 })
	cl := h.client()
	ex := h.executor("e1", "x", 50)
	for range 50 {
		h.submit(cl, "task_type", "x")
	}
	for range 50 {
		id, v := h.task(ex)
		h.start(ex, id, v)
	}
	for id := uint64(1); id <= 50; id++ {
		h.accepted(ex, id, 1, "failed")
	}
	assert.Equal(t, 50, h.c.armed)
}

func TestCore_SharedState(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	ex := h.executor("e1", "x", 1)
	run := func(kv ...string) (uint64, uint64) {
		id := h.submit(cl, "task_type", "x")
		_, v := h.task(ex)
		h.start(ex, id, v)
		return id, v
	}
	id, v := run()
	h.accepted(ex, id, v, "succeeded", "state.set.name", "a=b", "state.add.n", "5", "state.add.m", "-3")
	assert.Equal(t, uint64(1), h.c.stateVer, "+1 per accepted result with state changes")
	assert.Equal(t, map[string]string{"name": "a=b", "n": "5", "m": "-3"}, h.c.state, "add to an absent key: from 0")

	id, v = run()
	h.accepted(ex, id, v, "succeeded", "out.x", "1")
	assert.Equal(t, uint64(1), h.c.stateVer, "no state.*: unchanged")

	// The next task frame carries the state version.
	h.submit(cl, "task_type", "x")
	m := h.expect(ex, "task")
	assert.Equal(t, "1", m.Value("state_version"))
	id, v = tokenOf(t, m)
	h.start(ex, id, v)
	h.accepted(ex, id, v, "succeeded", "state.add.n", "-10", "state.set.n2", "", "state.add.m", "3")
	assert.Equal(t, uint64(2), h.c.stateVer)
	assert.Equal(t, "-5", h.c.state["n"])
	assert.Equal(t, "0", h.c.state["m"])
	assert.Equal(t, "", h.c.state["n2"])

	// state_get, from a client and from an executor.
	h.send(cl, "state_get", "req", "g", "keys", "n,zz,name")
	st := h.expect(cl, "state")
	assert.Equal(t, "g", st.Value("req"))
	assert.Equal(t, "2", st.Value("state_version"))
	assert.Equal(t, "-5", st.Value("state.n"))
	assert.Equal(t, "a=b", st.Value("state.name"))
	assert.False(t, st.Has("state.zz"), "keys not set are left out")
	assert.False(t, st.Has("state.m"))
	h.send(ex, "state_get")
	st = h.expect(ex, "state")
	assert.False(t, st.Has("req"))
	assert.Equal(t, "0", st.Value("state.m"), "no keys: every key")
	assert.Equal(t, "", st.Value("state.n2"))
	assert.True(t, st.Has("state.n2"))
	h.send(cl, "state_get", "req", "g", "keys", "")
	assert.Len(t, h.expect(cl, "state").Fields, 2+1+4)
	// A key asked for twice is answered once (found by the fuzzer: the
	// reply repeated state.n, a malformed frame), short list or long.
	h.send(cl, "state_get", "req", "g", "keys", "n,m,n")
	st = h.expect(cl, "state")
	assert.Equal(t, []string{"state.n", "state.m"}, stateKeys(st))
	long := strings.Repeat("zz,", 40) + "m,n,m,n"
	h.send(cl, "state_get", "req", "g", "keys", long)
	assert.Equal(t, []string{"state.m", "state.n"}, stateKeys(h.expect(cl, "state")))
	h.checkReplay()

	// state.* on a failed result: not checked, ignored.
	id, v = run()
	h.accepted(ex, id, v, "failed", "state.add.n", "not a number", "state.set.q", "1")
	assert.Equal(t, uint64(2), h.c.stateVer)
	assert.NotContains(t, h.c.state, "q")
	assert.Equal(t, Retrying, h.state(id))
	h.advance(time.Second)
	_, v = h.task(ex)
	h.start(ex, id, v)
	h.accepted(ex, id, v, "succeeded", "state.add.n", "1")
	assert.Equal(t, "-4", h.c.state["n"])
	assert.Equal(t, uint64(3), h.c.stateVer)
	h.checkReplay()
}

func TestCore_SharedStateIllegalValue(t *testing.T) {
	tests := []struct {
		name string
		kv   []string
		key  string
	}{
		{"add not an integer", []string{"state.set.ok", "1", "state.add.n", "1.5"}, "state.add.n"},
		{"add with a plus", []string{"state.add.n", "+1"}, "state.add.n"},
		{"add empty", []string{"state.add.n", ""}, "state.add.n"},
		{"add beyond int64", []string{"state.add.n", "9223372036854775808"}, "state.add.n"},
		{"add to a non-integer", []string{"state.add.ok", "1", "state.add.text", "1"}, "state.add.text"},
		{"overflow up", []string{"state.add.big", "1"}, "state.add.big"},
		{"overflow down", []string{"state.add.small", "-1"}, "state.add.small"},
		{"set and add of one key", []string{"state.set.n", "1", "state.add.n", "1"}, "state.set.n"},
		{"add and set of one key", []string{"state.add.ok", "1", "state.add.n", "1", "state.set.n", "1"}, "state.add.n"},
		{"first offending key as sent", []string{"state.add.text", "1", "state.add.x", "y"}, "state.add.text"},
		{"state before a large out", []string{"state.add.x", "y", "out.big", strings.Repeat("b", 1<<20)}, "state.add.x"},
		{"large out before state", []string{"out.big", strings.Repeat("b", 1<<20), "state.add.x", "y"}, "out.big"},
		{"large error before state", []string{"error", strings.Repeat("e", 1<<20), "state.add.x", "y"}, "error"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			cl := h.client()
			ex := h.executor("e1", "x", 1)
			id := h.submit(cl, "task_type", "x")
			_, v := h.task(ex)
			h.start(ex, id, v)
			h.accepted(ex, id, v, "succeeded", "state.set.text", "abc", "state.set.big", "9223372036854775807",
				"state.set.small", "-9223372036854775808", "state.set.ok", "0")
			before := maps.Clone(h.c.state)
			ver := h.c.stateVer

			id = h.submit(cl, "task_type", "x", "wait", "true", "max_attempts", "5")
			next := h.submit(cl, "task_type", "x")
			_, v = h.task(ex)
			h.start(ex, id, v)
			ack := h.result(ex, id, v, "succeeded", append(tc.kv, "out.o", "1")...)
			assert.Equal(t, "false", ack.Value("accepted"))
			assert.Equal(t, "illegal_value", ack.Value("reason"))
			assert.Equal(t, Failed, h.state(id), "failed, not retried")
			assert.Equal(t, "illegal_value "+tc.key, h.get(id).errText())
			out, _ := h.get(id).out()
			assert.Empty(t, out, "nothing applied")
			assert.Equal(t, before, h.c.state, "nothing applied")
			assert.Equal(t, ver, h.c.stateVer)
			d := h.expect(cl, "done")
			assert.Equal(t, "failed", d.Value("state"))
			assert.Equal(t, "illegal_value "+tc.key, d.Value("error"))
			got, _ := h.task(ex) // the slot is free
			assert.Equal(t, next, got)
			h.checkReplay()
		})
	}
}

// The size check for out.*: a result whose outputs would make task_state or
// done exceed the max frame is refused illegal_value with the out key.
func TestCore_OutTooLarge(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxFrame = 2048 })
	h.fx.dec.MaxFrame = 2048
	cl := h.client()
	ex := h.executor("e1", "x", 1)
	id := h.submit(cl, "task_type", "x", "wait", "true")
	_, v := h.task(ex)
	h.start(ex, id, v)
	h.refused(ex, id, v, wire.ReasonIllegalValue, "succeeded", "out.small", "1", "out.big", strings.Repeat("b", 2000), "out.after", "1")
	assert.Equal(t, Failed, h.state(id))
	assert.Equal(t, "illegal_value out.big", h.get(id).errText())
	h.expect(cl, "done")

	// An error text counts too; a failed result is checked as well.
	id = h.submit(cl, "task_type", "x", "wait", "true")
	_, v = h.task(ex)
	h.start(ex, id, v)
	h.refused(ex, id, v, wire.ReasonIllegalValue, "failed", "error", strings.Repeat("e", 2000))
	assert.Equal(t, Failed, h.state(id))
	h.expect(cl, "done")

	// The largest outputs that fit: task_state and done stay in the frame,
	// whatever the req (counted as 128 bytes).
	id = h.submit(cl, "task_type", "x", "wait", "true")
	_, v = h.task(ex)
	h.start(ex, id, v)
	size := 1500
	for ; ; size++ {
		ack := h.result(ex, id, v, "failed", "out.o", strings.Repeat("o", size+1), "retryable", "false")
		if ack.Value("accepted") == "true" {
			break
		}
		require.Fail(t, "refused")
	}
	_ = size
	h.send(cl, "query", "req", strings.Repeat("q", 64), "task_id", itoa(id))
	h.expect(cl, "done")
	h.expect(cl, "task_state") // decoded within MaxFrame by the recorder
	h.checkReplay()
}

// The largest out.* that is accepted, found by bisection, still gives a
// task_state that fits with a 64-byte req.
func TestCore_OutLimitFits(t *testing.T) {
	const maxFrame = 1024
	try := func(n int) (*harness, bool) {
		h := newHarness(t, func(c *Config) { c.MaxFrame = maxFrame })
		h.fx.dec.MaxFrame = maxFrame
		cl := h.client()
		ex := h.executor("e1", "x", 1)
		id := h.submit(cl, "task_type", "x", "wait", "true")
		_, v := h.task(ex)
		h.start(ex, id, v)
		ack := h.result(ex, id, v, "failed", "retryable", "false", "error", "err", "out.o", strings.Repeat("=", n))
		return h, ack.Value("accepted") == "true"
	}
	lo, hi := 0, maxFrame
	for lo+1 < hi {
		mid := (lo + hi) / 2
		if _, ok := try(mid); ok {
			lo = mid
		} else {
			hi = mid
		}
	}
	h, ok := try(lo)
	require.True(t, ok)
	assert.Greater(t, lo, 200)
	cl := PeerID(1)
	h.send(cl, "query", "req", strings.Repeat("\n", 64), "task_id", "1") // escapes to 128 bytes
	h.expect(cl, "done")
	h.expect(cl, "task_state")
}

// The out.* size check is the spec's formula to the byte: the worst
// task_state of the task (req of 128 bytes, every number at 20 digits, the
// longest state it can show with those outputs) with out.o at the limit
// fits max_frame exactly, and one byte more is refused. A retryable failure
// keeps its outputs through retrying, and a cancel keeps them too.
func TestCore_OutLimitExact(t *testing.T) {
	const maxFrame = 1024
	const twenty = "99999999999999999999"
	for _, tc := range []struct{ status, retryable, shows string }{
		{"succeeded", "false", "succeeded"},
		{"failed", "false", "failed"},
		{"failed", "true", "cancelled"},
	} {
		status := tc.status
		worst := wire.Begin(nil, "task_state")
		worst.Str("req", strings.Repeat("r", 128))
		for _, k := range []string{"task_id", "version"} {
			worst.Str(k, twenty)
		}
		worst.Str("state", tc.shows)
		for _, k := range []string{"attempt", "max_attempts"} {
			worst.Str(k, twenty)
		}
		worst.Str("task_type", "x")
		worst.Str("executor_id", "e1")
		worst.Str("created_ms", twenty)
		worst.Str("updated_ms", twenty)
		worst.Str("trace_id", "T")
		worst.Str("out.o", "")
		frame, err := worst.Finish()
		require.NoError(t, err)
		limit := maxFrame - (len(frame) - wire.HeaderLen)
		for _, n := range []int{limit, limit + 1} {
			h := newHarness(t, func(c *Config) { c.MaxFrame = maxFrame })
			h.fx.dec.MaxFrame = maxFrame
			cl := h.client()
			ex := h.executor("e1", "x", 1)
			id := h.submit(cl, "task_type", "x", "trace_id", "T")
			_, v := h.task(ex)
			h.start(ex, id, v)
			ack := h.result(ex, id, v, status, "retryable", tc.retryable, "out.o", strings.Repeat("o", n))
			assert.Equal(t, n == limit, ack.Value("accepted") == "true", "%+v with out.o of %d bytes (limit %d)", tc, n, limit)
			if n == limit && tc.retryable == "true" {
				long := strings.Repeat("\n", 64) // the longest req: 128 bytes escaped
				h.send(cl, "cancel", "req", long, "task_id", itoa(id))
				h.expect(cl, "cancelled")
				h.send(cl, "query", "req", long, "task_id", itoa(id))
				st := h.expect(cl, "task_state") // decoded within maxFrame by the recorder
				assert.Equal(t, "cancelled", st.Value("state"))
			}
		}
	}
}

func TestCore_ResultReasons(t *testing.T) {
	type setup struct {
		h      *harness
		cl, ex PeerID
		id     uint64
		v      uint64
	}
	running := func(t *testing.T, mods ...func(*Config)) setup {
		h := newHarness(t, mods...)
		cl := h.client()
		ex := h.executor("e1", "x", 1)
		id := h.submit(cl, "task_type", "x")
		_, v := h.task(ex)
		h.start(ex, id, v)
		return setup{h, cl, ex, id, v}
	}
	tests := []struct {
		name   string
		reason wire.Reason
		run    func(t *testing.T) (setup, PeerID, uint64, uint64)
	}{
		{"unknown task", wire.ReasonUnknownTask, func(t *testing.T) (setup, PeerID, uint64, uint64) {
			s := running(t)
			return s, s.ex, 99, 1
		}},
		{"dropped task", wire.ReasonUnknownTask, func(t *testing.T) (setup, PeerID, uint64, uint64) {
			s := running(t, func(c *Config) { c.RetentionMax = 1 })
			s.h.accepted(s.ex, s.id, s.v, "succeeded")
			s.h.submit(s.cl, "task_type", "x")
			id, v := s.h.task(s.ex)
			s.h.start(s.ex, id, v)
			s.h.accepted(s.ex, id, v, "succeeded")
			s.h.advance(time.Millisecond)
			return s, s.ex, s.id, s.v
		}},
		{"version ahead", wire.ReasonStale, func(t *testing.T) (setup, PeerID, uint64, uint64) {
			s := running(t)
			return s, s.ex, s.id, s.v + 1
		}},
		{"version 0", wire.ReasonStale, func(t *testing.T) (setup, PeerID, uint64, uint64) {
			s := running(t)
			return s, s.ex, s.id, 0
		}},
		{"other executor", wire.ReasonStale, func(t *testing.T) (setup, PeerID, uint64, uint64) {
			s := running(t)
			e2 := s.h.executor("e2", "x", 1)
			return s, e2, s.id, s.v
		}},
		{"taken back by start timeout", wire.ReasonStale, func(t *testing.T) (setup, PeerID, uint64, uint64) {
			s := running(t, func(c *Config) { c.StartTimeout = time.Second })
			s.h.submit(s.cl, "task_type", "x")
			e2 := s.h.executor("e2", "x", 1)
			id, v := s.h.task(e2)
			s.h.advance(time.Second)
			require.Equal(t, Dispatched, s.h.state(id)) // dispatched again, to e2
			s.h.heartbeat(s.ex, itoa(s.id)+".1")
			return s, e2, id, v
		}},
		{"taken back by task timeout", wire.ReasonStale, func(t *testing.T) (setup, PeerID, uint64, uint64) {
			h := newHarness(t)
			cl := h.client()
			ex := h.executor("e1", "x", 1)
			id := h.submit(cl, "task_type", "x", "timeout_ms", "100")
			_, v := h.task(ex)
			h.start(ex, id, v)
			h.advance(100 * time.Millisecond)
			h.expect(ex, "cancel")
			require.Equal(t, Retrying, h.state(id))
			return setup{h, cl, ex, id, v}, ex, id, v
		}},
		{"taken back by reconciliation", wire.ReasonStale, func(t *testing.T) (setup, PeerID, uint64, uint64) {
			s := running(t)
			s.h.heartbeat(s.ex, "")
			s.h.heartbeat(s.ex, "")
			s.h.expect(s.ex, "cancel")
			return s, s.ex, s.id, s.v
		}},
		{"taken back by loss", wire.ReasonStale, func(t *testing.T) (setup, PeerID, uint64, uint64) {
			s := running(t)
			s.h.advance(DefaultHeartbeatTimeout)
			ex := s.h.executor("e1", "x", 1)
			return s, ex, s.id, s.v
		}},
		{"taken back by task timeout, last attempt", wire.ReasonStale, func(t *testing.T) (setup, PeerID, uint64, uint64) {
			h := newHarness(t)
			cl := h.client()
			ex := h.executor("e1", "x", 1)
			id := h.submit(cl, "task_type", "x", "timeout_ms", "100", "max_attempts", "1")
			_, v := h.task(ex)
			h.start(ex, id, v)
			h.advance(100 * time.Millisecond)
			h.expect(ex, "cancel")
			require.Equal(t, Failed, h.state(id))
			return setup{h, cl, ex, id, v}, ex, id, v
		}},
		{"taken back by reconciliation, last attempt", wire.ReasonStale, func(t *testing.T) (setup, PeerID, uint64, uint64) {
			h := newHarness(t)
			cl := h.client()
			ex := h.executor("e1", "x", 1)
			id := h.submit(cl, "task_type", "x", "max_attempts", "1")
			_, v := h.task(ex)
			h.start(ex, id, v)
			h.heartbeat(ex, "")
			h.heartbeat(ex, "")
			h.expect(ex, "cancel")
			require.Equal(t, Failed, h.state(id))
			return setup{h, cl, ex, id, v}, ex, id, v
		}},
		{"taken back by loss, last attempt", wire.ReasonStale, func(t *testing.T) (setup, PeerID, uint64, uint64) {
			h := newHarness(t)
			cl := h.client()
			ex := h.executor("e1", "x", 1)
			id := h.submit(cl, "task_type", "x", "max_attempts", "1")
			_, v := h.task(ex)
			h.start(ex, id, v)
			h.advance(DefaultHeartbeatTimeout)
			require.Equal(t, Failed, h.state(id))
			ex = h.executor("e1", "x", 1)
			return setup{h, cl, ex, id, v}, ex, id, v
		}},
		{"taken back by bye, last attempt", wire.ReasonStale, func(t *testing.T) (setup, PeerID, uint64, uint64) {
			h := newHarness(t)
			cl := h.client()
			ex := h.executor("e1", "x", 1)
			id := h.submit(cl, "task_type", "x", "max_attempts", "1")
			_, v := h.task(ex)
			h.start(ex, id, v)
			h.send(ex, "bye")
			require.Equal(t, Failed, h.state(id))
			ex = h.executor("e1", "x", 1)
			return setup{h, cl, ex, id, v}, ex, id, v
		}},
		{"after a failed result", wire.ReasonIllegalTransition, func(t *testing.T) (setup, PeerID, uint64, uint64) {
			s := running(t)
			s.h.accepted(s.ex, s.id, s.v, "failed", "retryable", "false")
			return s, s.ex, s.id, s.v
		}},
		{"after a retried result", wire.ReasonStale, func(t *testing.T) (setup, PeerID, uint64, uint64) {
			s := running(t)
			s.h.accepted(s.ex, s.id, s.v, "failed")
			return s, s.ex, s.id, s.v
		}},
		{"cancelled", wire.ReasonCancelled, func(t *testing.T) (setup, PeerID, uint64, uint64) {
			s := running(t)
			s.h.send(s.cl, "cancel", "req", "c", "task_id", itoa(s.id))
			s.h.expect(s.cl, "cancelled")
			s.h.expect(s.ex, "cancel")
			return s, s.ex, s.id, s.v
		}},
		{"stale before cancelled", wire.ReasonStale, func(t *testing.T) (setup, PeerID, uint64, uint64) {
			s := running(t)
			s.h.send(s.cl, "cancel", "req", "c", "task_id", itoa(s.id))
			s.h.expect(s.cl, "cancelled")
			s.h.expect(s.ex, "cancel")
			return s, s.ex, s.id, s.v + 1
		}},
		{"before started", wire.ReasonIllegalTransition, func(t *testing.T) (setup, PeerID, uint64, uint64) {
			h := newHarness(t)
			cl := h.client()
			ex := h.executor("e1", "x", 1)
			id := h.submit(cl, "task_type", "x")
			_, v := h.task(ex)
			return setup{h, cl, ex, id, v}, ex, id, v
		}},
		{"after success", wire.ReasonIllegalTransition, func(t *testing.T) (setup, PeerID, uint64, uint64) {
			s := running(t)
			s.h.accepted(s.ex, s.id, s.v, "succeeded")
			return s, s.ex, s.id, s.v
		}},
		{"stale before illegal_transition", wire.ReasonStale, func(t *testing.T) (setup, PeerID, uint64, uint64) {
			s := running(t)
			s.h.accepted(s.ex, s.id, s.v, "succeeded")
			return s, s.ex, s.id, s.v + 1
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, from, id, v := tc.run(t)
			h := s.h
			h.drain(from)
			before, nrec := dump(h.c), len(h.fx.records)
			for _, status := range []string{"succeeded", "failed"} {
				h.refused(from, id, v, tc.reason, status, "out.x", "1", "state.set.k", "v", "error", "e")
			}
			assert.Equal(t, before, dump(h.c), "a refused result changes nothing")
			assert.Len(t, h.fx.records, nrec)
			h.checkReplay() // what decides the reason is durable
			assert.Empty(t, h.c.state)
			h.none(from)
			assert.False(t, h.fx.closed[from])
		})
	}
}

func TestCore_WaitDone(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	ex := h.executor("e1", "x", 1)
	id := h.submit(cl, "task_type", "x", "wait", "true", "max_attempts", "2")
	_, v := h.task(ex)
	h.start(ex, id, v)
	h.accepted(ex, id, v, "failed", "error", "first", "out.a", "1")
	h.none(cl) // not at a retry
	h.advance(time.Second)
	_, v = h.task(ex)
	h.start(ex, id, v)
	h.accepted(ex, id, v, "failed", "error", "second=bad\nline", "out.b", "2", "retryable", "true")
	d := h.expect(cl, "done")
	assert.Equal(t, "s", d.Value("req"), "the submit's req")
	assert.Equal(t, itoa(id), d.Value("task_id"))
	assert.Equal(t, "failed", d.Value("state"))
	assert.Equal(t, "second=bad\nline", d.Value("error"))
	assert.Equal(t, "2", d.Value("out.b"))
	assert.False(t, d.Has("out.a"), "only the last attempt's outputs")

	// Cancelled, with wait, on another client; a closed waiter gets nothing.
	cl2 := h.client()
	cl3 := h.client()
	id = h.submit(cl2, "task_type", "y", "wait", "true")
	h.send(cl3, "submit", "req", "w3", "task_type", "y", "wait", "true", "key", "k")
	h.expect(cl3, "submitted")
	h.c.Closed(cl3)
	h.send(cl, "cancel", "req", "c", "task_id", itoa(id))
	h.expect(cl, "cancelled")
	d = h.expect(cl2, "done")
	assert.Equal(t, "cancelled", d.Value("state"))
	h.none(cl3)
	// No req, no req in done.
	h.send(cl, "submit", "task_type", "x", "wait", "true")
	m := h.expect(cl, "submitted")
	assert.False(t, m.Has("req"))
	id, _ = tokenOf(t, msgWithVersion(m))
	_, v = h.task(ex)
	h.start(ex, id, v)
	h.accepted(ex, id, v, "succeeded", "out.r", "x")
	d = h.expect(cl, "done")
	assert.False(t, d.Has("req"))
	assert.Equal(t, "x", d.Value("out.r"))
	assert.False(t, d.Has("error"))
}

func msgWithVersion(m *wire.Message) *wire.Message {
	c := m.Clone()
	c.Set("version", "0")
	return c
}

func TestCore_Dependencies(t *testing.T) {
	t.Run("bad", func(t *testing.T) {
		h := newHarness(t)
		cl := h.client()
		h.submit(cl, "task_type", "x")
		for _, deps := range []string{"2", "1,2", "1,,1", "x", "1, 1", ",", "0", "0,1"} {
			h.send(cl, "submit", "req", "d", "task_type", "x", "depends_on", deps)
			e := h.expectErr(cl, wire.CodeBadRequest)
			assert.Equal(t, "d", e.Value("req"))
			assert.Equal(t, 1, h.c.tasks.count, "%q", deps)
		}
	})
	t.Run("waits for all", func(t *testing.T) {
		h := newHarness(t)
		cl := h.client()
		a := h.submit(cl, "task_type", "x")
		b := h.submit(cl, "task_type", "x")
		c := h.submit(cl, "task_type", "x", "depends_on", fmt.Sprintf("%d,%d,%d", a, b, a), "wait", "true")
		assert.Equal(t, Waiting, h.state(c))
		assert.Equal(t, []uint64{a, b}, depsOf(h.get(c)), "duplicates count once")
		ex := h.executor("e1", "x", 1)
		h.finish(ex)
		assert.Equal(t, Waiting, h.state(c))
		h.checkReplay()
		h.finish(ex)
		id, _ := h.task(ex) // released and dispatched
		assert.Equal(t, c, id)
		// Dependency already succeeded: pending at once.
		d := h.submit(cl, "task_type", "y", "depends_on", itoa(a))
		assert.Equal(t, Pending, h.state(d))
		h.checkReplay()
	})
	t.Run("many, ending in any order", func(t *testing.T) {
		// Past shortDeps the list is deduplicated through a set and the
		// check resumes where it stopped: same answers as the short way.
		h := newHarness(t)
		cl := h.client()
		const n = 3 * shortDeps
		var list []string
		var want []uint64
		for range n {
			id := h.submit(cl, "task_type", "x")
			want = append(want, id)
			list = append(list, itoa(id), itoa(want[0])) // every other one a repeat
		}
		w := h.submit(cl, "task_type", "y", "depends_on", strings.Join(list, ","))
		assert.Equal(t, want, depsOf(h.get(w)), "duplicates count once, in the order given")
		ex := h.executor("e1", "x", 1)
		for i := range n {
			id, v := h.task(ex) // dispatched in order: the first dependency ends first
			require.Equal(t, Waiting, h.state(w), "after %d of %d", i, n)
			h.start(ex, id, v)
			h.accepted(ex, id, v, "succeeded")
		}
		assert.Equal(t, Pending, h.state(w))
		assert.Empty(t, h.c.depsMet, "no bookkeeping left once released")
		h.checkReplay()

		// The last dependency in the list ends first: the resumed scan
		// must not skip it.
		h2 := newHarness(t)
		cl2 := h2.client()
		var ids []string
		for range n {
			ids = append(ids, itoa(h2.submit(cl2, "task_type", "x", "priority", "0")))
		}
		last := h2.submit(cl2, "task_type", "x", "priority", "9")
		ids = append(ids, itoa(last))
		w2 := h2.submit(cl2, "task_type", "y", "depends_on", strings.Join(ids, ","))
		ex2 := h2.executor("e1", "x", 1)
		for range n + 1 {
			require.Equal(t, Waiting, h2.state(w2))
			id, v := h2.task(ex2)
			h2.start(ex2, id, v)
			h2.accepted(ex2, id, v, "succeeded")
		}
		assert.Equal(t, Pending, h2.state(w2))
	})
	t.Run("chain", func(t *testing.T) {
		h := newHarness(t)
		cl := h.client()
		a := h.submit(cl, "task_type", "x", "max_attempts", "1")
		b := h.submit(cl, "task_type", "x", "depends_on", itoa(a), "wait", "true")
		c := h.submit(cl, "task_type", "x", "depends_on", itoa(b), "wait", "true")
		ex := h.executor("e1", "x", 1)
		_, v := h.task(ex)
		h.start(ex, a, v)
		h.accepted(ex, a, v, "failed")
		assert.Equal(t, Cancelled, h.state(b))
		assert.Equal(t, Cancelled, h.state(c))
		assert.Equal(t, fmt.Sprintf("dependency %d failed", a), h.get(b).errText())
		assert.Equal(t, fmt.Sprintf("dependency %d cancelled", b), h.get(c).errText())
		d := h.expect(cl, "done")
		assert.Equal(t, itoa(b), d.Value("task_id"))
		assert.Equal(t, fmt.Sprintf("dependency %d failed", a), d.Value("error"))
		d = h.expect(cl, "done")
		assert.Equal(t, itoa(c), d.Value("task_id"))
		h.none(ex)
		h.checkReplay()
	})
	t.Run("long chain", func(t *testing.T) {
		h := newHarness(t)
		cl := h.client()
		prev := h.submit(cl, "task_type", "x")
		first := prev
		for range 5000 {
			prev = h.submit(cl, "task_type", "x", "depends_on", itoa(prev))
		}
		h.send(cl, "cancel", "req", "c", "task_id", itoa(first))
		h.expect(cl, "cancelled")
		assert.Equal(t, 5001, h.c.counts[Cancelled])
		assert.Equal(t, fmt.Sprintf("dependency %d cancelled", prev-1), h.get(prev).errText())
	})
	t.Run("diamond", func(t *testing.T) {
		h := newHarness(t)
		cl := h.client()
		a := h.submit(cl, "task_type", "x")
		b := h.submit(cl, "task_type", "x", "depends_on", itoa(a))
		c := h.submit(cl, "task_type", "x", "depends_on", itoa(a))
		d := h.submit(cl, "task_type", "x", "depends_on", fmt.Sprintf("%d,%d", c, b))
		h.send(cl, "cancel", "req", "c", "task_id", itoa(a))
		h.expect(cl, "cancelled")
		for _, id := range []uint64{b, c, d} {
			assert.Equal(t, Cancelled, h.state(id))
		}
		// b ended first (it is a's first dependent), so d names b.
		assert.Equal(t, fmt.Sprintf("dependency %d cancelled", b), h.get(d).errText(),
			"names the first dependency that ended so")
		h.checkReplay()
	})
	t.Run("diamond succeeds", func(t *testing.T) {
		h := newHarness(t)
		cl := h.client()
		a := h.submit(cl, "task_type", "x")
		b := h.submit(cl, "task_type", "x", "depends_on", itoa(a))
		c := h.submit(cl, "task_type", "x", "depends_on", itoa(a))
		d := h.submit(cl, "task_type", "x", "depends_on", fmt.Sprintf("%d,%d", b, c))
		ex := h.executor("e1", "x", 1)
		var order []uint64
		for range 4 {
			order = append(order, h.finish(ex))
		}
		assert.Equal(t, []uint64{a, b, c, d}, order)
		h.checkReplay()
	})
	t.Run("already failed at submit", func(t *testing.T) {
		h := newHarness(t)
		cl := h.client()
		a := h.submit(cl, "task_type", "x")
		b := h.submit(cl, "task_type", "x")
		h.send(cl, "cancel", "req", "c", "task_id", itoa(b))
		h.expect(cl, "cancelled")
		h.send(cl, "submit", "req", "s", "task_type", "x", "depends_on", fmt.Sprintf("%d,%d", a, b), "wait", "true")
		assert.Equal(t, []string{"submitted", "done"}, h.types(cl))
		m := h.expect(cl, "submitted")
		id, _ := tokenOf(t, msgWithVersion(m))
		d := h.expect(cl, "done")
		assert.Equal(t, "cancelled", d.Value("state"))
		assert.Equal(t, fmt.Sprintf("dependency %d cancelled", b), d.Value("error"))
		assert.Equal(t, Cancelled, h.state(id))
		// Created, so the id is used and the task is known.
		assert.Equal(t, "cancelled", h.query(cl, id).Value("state"))
		h.checkReplay()
		// The first such id in depends_on order is named.
		c := h.submit(cl, "task_type", "x", "max_attempts", "1")
		ex := h.executor("e1", "x", 1)
		h.finish(ex) // a
		_, v := h.task(ex)
		h.start(ex, c, v)
		h.accepted(ex, c, v, "failed")
		e := h.submit(cl, "task_type", "x", "depends_on", fmt.Sprintf("%d,%d,%d", a, c, b))
		assert.Equal(t, fmt.Sprintf("dependency %d failed", c), h.get(e).errText())
		h.checkReplay()
	})
	t.Run("dependency dropped by retention", func(t *testing.T) {
		h := newHarness(t, func(c *Config) { c.Retention = time.Minute })
		cl := h.client()
		a := h.submit(cl, "task_type", "x")
		b := h.submit(cl, "task_type", "y")
		c := h.submit(cl, "task_type", "x", "depends_on", fmt.Sprintf("%d,%d", a, b))
		ex := h.executor("e1", "x", 1)
		h.finish(ex)
		h.advance(time.Minute)
		require.Nil(t, h.c.tasks.get(a))
		h.send(cl, "submit", "req", "s", "task_type", "x", "depends_on", itoa(a))
		h.expectErr(cl, wire.CodeBadRequest)
		ey := h.executor("ey", "y", 1)
		h.finish(ey) // b: c's last live dependency
		ex = h.executor("e2", "x", 1)
		id, _ := h.task(ex)
		assert.Equal(t, c, id)
		h.checkReplay()
	})
}

// A state_get whose reply would exceed the max frame is a bad_request; a
// smaller selection of keys is answered.
func TestCore_StateGetTooLarge(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxFrame = MinMaxFrame })
	h.fx.dec.MaxFrame = MinMaxFrame
	cl := h.client()
	ex := h.executor("e1", "x", 1)
	id := h.submit(cl, "task_type", "x")
	_, v := h.task(ex)
	h.start(ex, id, v)
	big := strings.Repeat("v", 400)
	h.accepted(ex, id, v, "succeeded", "state.set.a", big, "state.set.b", big, "state.set.c", big)
	h.send(cl, "state_get", "req", "g")
	e := h.expectErr(cl, wire.CodeBadRequest)
	assert.Equal(t, "g", e.Value("req"))
	h.send(cl, "state_get", "req", "g", "keys", "a,c")
	st := h.expect(cl, "state")
	assert.Equal(t, big, st.Value("state.a"))
	assert.Equal(t, big, st.Value("state.c"))
	h.send(ex, "state_get", "keys", "a,b,c")
	h.expectErr(ex, wire.CodeBadRequest)
	assert.False(t, h.fx.closed[ex])
}

// started and result name a dispatch by task_id and version; a missing or
// malformed half is a bad_request that names the key and keeps the
// connection, and the task is untouched.
func TestCore_DispatchTokenErrors(t *testing.T) {
	cases := []struct {
		name, key string
		kv        []string
	}{
		{"no task_id", "task_id", []string{"version", "1"}},
		{"no version", "version", []string{"task_id", "1"}},
		{"neither: task_id first", "task_id", nil},
		{"task_id not a number", "task_id", []string{"task_id", "x", "version", "1"}},
		{"task_id with a sign", "task_id", []string{"task_id", "+1", "version", "1"}},
		{"version leading zero", "version", []string{"task_id", "1", "version", "01"}},
		{"version over uint64", "version", []string{"task_id", "1", "version", "18446744073709551616"}},
		{"both bad: task_id first", "task_id", []string{"version", "y", "task_id", "x"}},
	}
	for _, tc := range cases {
		for _, typ := range []string{"started", "result"} {
			t.Run(typ+"/"+tc.name, func(t *testing.T) {
				h := newHarness(t)
				cl := h.client()
				ex := h.executor("e1", "x", 1)
				id := h.submit(cl, "task_type", "x")
				h.task(ex)
				kv := tc.kv
				if typ == "result" {
					kv = append(slices.Clone(kv), "status", "succeeded")
				}
				h.send(ex, typ, kv...)
				e := h.expectErr(ex, wire.CodeBadRequest)
				assert.Contains(t, e.Value("message"), tc.key)
				assert.False(t, h.fx.closed[ex])
				assert.Equal(t, Dispatched, h.state(id))
			})
		}
	}
}

// A version no dispatch had, up to the uint64 maximum, is well formed: the
// result is refused as stale rather than as a bad request.
func TestCore_DispatchTokenHugeVersion(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	ex := h.executor("e1", "x", 1)
	id := h.submit(cl, "task_type", "x")
	_, ver := h.task(ex)
	h.start(ex, id, ver)
	for _, v := range []string{"4294967297", "18446744073709551615"} {
		h.send(ex, "result", "task_id", itoa(id), "version", v, "status", "succeeded")
		ack := h.expect(ex, "result_ack")
		assert.Equal(t, "false", ack.Value("accepted"))
		assert.Equal(t, string(wire.ReasonStale), ack.Value("reason"))
		assert.Equal(t, v, ack.Value("version"))
		assert.Equal(t, Running, h.state(id))
	}
}

// Outputs are also limited by keys: task_state carries 12 keys besides
// out.* and error, and a payload at most 1,024, so a succeeded result
// with more than 1,012 out keys (1,011 with an error) is refused
// illegal_value naming the first key past the room, even far under the
// max frame. Accepted, its task could never be queried. At the limit the
// task_state has exactly 1,024 keys, which section 2 allows.
func TestCore_OutTooManyKeys(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxFrame = 1 << 20 })
	cl := h.client()
	ex := h.executor("e1", "x", 1)
	outs := func(status string, n int) []string {
		kv := []string{status}
		for i := range n {
			kv = append(kv, fmt.Sprintf("out.k%d", i), "v")
		}
		return kv
	}
	run := func(status, errText string, n int) (uint64, *wire.Message) {
		id := h.submit(cl, "task_type", "x")
		_, v := h.task(ex)
		h.start(ex, id, v)
		kv := []string{"task_id", fmt.Sprint(id), "version", fmt.Sprint(v), "retryable", "false"}
		if errText != "" {
			kv = append(kv, "error", errText)
		}
		h.send(ex, "result", append(append(kv, "status"), outs(status, n)...)...)
		return id, h.expect(ex, "result_ack")
	}
	cases := []struct {
		status, errText string
		outs            int
		refused         string // the key named, "" when accepted
	}{
		{"succeeded", "", 1012, ""},
		{"succeeded", "", 1013, "out.k1012"},
		{"failed", "e", 1011, ""},
		{"failed", "e", 1012, "out.k1011"},
		{"failed", "", 1012, ""},
	}
	for _, tc := range cases {
		id, ack := run(tc.status, tc.errText, tc.outs)
		if tc.refused != "" {
			assert.Equal(t, "false", ack.Value("accepted"), "%+v", tc)
			assert.Equal(t, "illegal_value "+tc.refused, h.get(id).errText(), "%+v", tc)
			continue
		}
		assert.Equal(t, "true", ack.Value("accepted"), "%+v", tc)
		h.send(cl, "query", "req", "q", "task_id", fmt.Sprint(id))
		st := h.expect(cl, "task_state")
		assert.Len(t, st.Fields, wire.MaxKeys, "the largest task_state: %+v", tc)
	}
}

// A state_get whose reply would hold more than 1,024 keys is answered
// bad_request, like one too large in bytes: the shared state's key count
// is not bounded, and the request must be answered, never dropped.
func TestCore_StateGetTooManyKeys(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxFrame = 1 << 20 })
	cl := h.client()
	ex := h.executor("e1", "x", 1)
	set := func(from, n int) {
		id := h.submit(cl, "task_type", "x")
		_, v := h.task(ex)
		h.start(ex, id, v)
		kv := []string{}
		for i := from; i < from+n; i++ {
			kv = append(kv, fmt.Sprintf("state.set.k%04d", i), "1")
		}
		h.accepted(ex, id, v, "succeeded", kv...)
	}
	set(0, wire.MaxKeys-stateReplyKeys-10) // 1,011 keys: a reply of 1,014 fits
	h.send(cl, "state_get", "req", "g")
	st := h.expect(cl, "state")
	assert.Len(t, st.Fields, wire.MaxKeys-10)
	set(wire.MaxKeys-stateReplyKeys-10, 10) // 1,021: exactly 1,024 keys
	h.send(cl, "state_get", "req", "g")
	assert.Len(t, h.expect(cl, "state").Fields, wire.MaxKeys)
	set(wire.MaxKeys-stateReplyKeys, 1) // one more
	h.send(cl, "state_get", "req", "g")
	e := h.expectErr(cl, wire.CodeBadRequest)
	assert.Equal(t, "g", e.Value("req"))
	h.send(ex, "state_get") // no req: type, state_version and 1,022 keys fit
	assert.Len(t, h.expect(ex, "state").Fields, wire.MaxKeys)
	set(wire.MaxKeys-stateReplyKeys+1, 1)
	h.send(ex, "state_get")
	h.expectErr(ex, wire.CodeBadRequest)
	h.send(cl, "state_get", "req", "g", "keys", "k0000,k1021")
	assert.Len(t, h.expect(cl, "state").Fields, 5)
	assert.False(t, h.fx.closed[cl])
}

// stateKeys returns the state.* keys of a state reply, in order.
func stateKeys(m *wire.Message) []string {
	var ks []string
	for _, f := range m.Fields {
		if strings.HasPrefix(f.Key, wire.PrefixState) {
			ks = append(ks, f.Key)
		}
	}
	return ks
}
