package core

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/wire"
)

func TestExecTypes_AddAndDropWithoutReconnecting(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	ex := h.executor("e1", "a", 2)
	h.executor("e0", "b", 1) // registered after e1
	a1 := h.submit(cl, "task_type", "a")
	id, ver := h.task(ex)
	require.Equal(t, a1, id)
	h.start(ex, id, ver)
	b1 := h.submit(cl, "task_type", "c")
	h.none(ex)

	// Add c, drop a: the pending c task comes at once, the running a task
	// stays, and its result is accepted.
	h.send(ex, "types", "req", "t", "add", "c", "drop", "a")
	ok := h.expect(ex, "types_ok")
	assert.Equal(t, "t", ok.Value("req"))
	assert.Equal(t, "1", ok.Value("task_types"))
	cid, _ := h.task(ex)
	assert.Equal(t, b1, cid)
	assert.Equal(t, 1, h.fx.waits["types_ok"][WaitConfirm])
	assert.Equal(t, Running, h.state(a1))
	h.accepted(ex, id, ver, "succeeded")
	h.submit(cl, "task_type", "a")
	h.none(ex)

	// A change that changes nothing is answered, with no record.
	n := len(h.fx.records)
	h.send(ex, "types", "add", "c", "drop", "zz")
	assert.Equal(t, "1", h.expect(ex, "types_ok").Value("task_types"))
	assert.Len(t, h.fx.records, n)
	assert.EqualValues(t, 1, h.c.Ops().TypeChanges)

	h.checkReplay()
	h.restartFrom(snapshotEntries(t, h.c), len(h.fx.records))
	assert.Equal(t, []string{"c"}, h.c.Executors()[0].Types)
	assert.Equal(t, "e1", h.c.Executors()[0].ID, "registration order kept")
}

func TestExecTypes_BadRequests(t *testing.T) {
	h := newHarness(t)
	ex := h.executor("e1", "a", 1)
	for _, kv := range [][]string{
		{"add", "x", "drop", "x"},
		{"add", "x,,y"},
		{"drop", "a, b"},
	} {
		h.send(ex, "types", append([]string{"req", "b"}, kv...)...)
		assert.Equal(t, "b", h.expectErr(ex, wire.CodeBadRequest).Value("req"), "%v", kv)
	}
	many := make([]byte, 0, 8000)
	for i := range wire.MaxExecutorTypes {
		if i > 0 {
			many = append(many, ',')
		}
		many = append(many, []byte("n"+itoa(i))...)
	}
	h.send(ex, "types", "add", string(many))
	assert.Contains(t, h.expectErr(ex, wire.CodeBadRequest).Value("message"), "more than 1024")
	h.c.SetAvailable(false)
	h.send(ex, "types", "add", "z")
	h.expectErr(ex, wire.CodeUnavailable)
	h.c.SetAvailable(true)
	assert.Equal(t, []string{"a"}, h.c.Executors()[0].Types)

	cl := h.client()
	h.send(cl, "types", "req", "c", "add", "z")
	h.expectErr(cl, wire.CodeNotPermitted)
	h.send(ex, "type_list", "req", "c")
	h.expectErr(ex, wire.CodeNotPermitted)
}
