package core

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A set field (label) is one more task_state key: on a labelled task a
// result with 1,012 out keys would make a task_state of 1,025 keys that
// cannot be encoded, so query would never be answered. It is refused
// naming the key past the room; at 1,011 the task_state has 1,024 keys.
func TestResult_LabelCountsTowardTaskStateKeys(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxFrame = 1 << 20 })
	cl := h.client()
	ex := h.executor("e1", "x", 1)
	run := func(n int) uint64 {
		id := h.submit(cl, "task_type", "x", "label", "batch-7")
		_, ver := h.task(ex)
		h.start(ex, id, ver)
		var kv []string
		for i := range n {
			kv = append(kv, fmt.Sprintf("out.k%d", i), "v")
		}
		h.result(ex, id, ver, "succeeded", kv...)
		return id
	}
	id := run(1012)
	assert.Equal(t, "illegal_value out.k1011", h.get(id).errText())
	h.query(cl, id)

	id = run(1011)
	q := h.query(cl, id)
	require.Equal(t, "succeeded", q.Value("state"))
	assert.Equal(t, "batch-7", q.Value("label"))
	assert.Len(t, q.Fields, 1024, "task_state keys, type included")
}

// The label's bytes count toward the task_state byte bound, which
// outTooLarge and requeuedStateSize build on.
func TestResult_LabelCountsTowardTaskStateBytes(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	plain := h.get(h.submit(cl, "task_type", "x"))
	label := "batch\\7" // a backslash escapes to two bytes
	labelled := h.get(h.submit(cl, "task_type", "x", "label", label))
	require.Equal(t, "batch\\7", labelled.fields()[fieldLabel])
	got := taskStateBase(labelled, 9) - taskStateBase(plain, 9)
	assert.Equal(t, len("\nlabel=")+len(`batch\\7`), got)
	assert.Equal(t, taskStateKeysOf(plain)+1, taskStateKeysOf(labelled))
}
