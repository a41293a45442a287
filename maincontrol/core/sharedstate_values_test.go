package core

import (
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/apollo11/apollo11/wire"
	"github.com/stretchr/testify/assert"
)

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
