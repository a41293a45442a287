package core

import (
	"slices"
	"testing"
	"time"

	"github.com/apollo11/apollo11/wire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

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
