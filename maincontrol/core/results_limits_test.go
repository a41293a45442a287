package core

import (
	"fmt"
	"strings"
	"testing"

	"github.com/apollo11/apollo11/wire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

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
