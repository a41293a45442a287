package core

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/wire"
)

// unknownTokens lists n dispatch tokens of tasks that do not exist.
func unknownTokens(n int) string {
	items := make([]string, n)
	for i := range items {
		items[i] = strconv.Itoa(1_000_000+i) + ".1"
	}
	return strings.Join(items, ",")
}

// backlogRecorder is the harness's recorder with a Backlog that says
// blocked peers have not read their output.
type backlogRecorder struct {
	*recorder
	blocked map[PeerID]bool
}

func (b backlogRecorder) Backlogged(p PeerID) bool { return b.blocked[p] }

// A running= list longer than twice the executor's slots (or the
// dispatches it holds) plus 64 is bad_request, answered by no cancel: a
// heartbeat listing 48,000 unknown dispatches got 48,000 cancel frames.
func TestCore_HeartbeatRunningListBounded(t *testing.T) {
	h := newHarness(t)
	ex := h.executor("e1", "x", 1)
	limit := 2*1 + runningSlack
	h.send(ex, "heartbeat", "seq", "1", "running", unknownTokens(limit+1))
	e := h.expectErr(ex, wire.CodeBadRequest)
	assert.Contains(t, e.Value("message"), "running")
	assert.Contains(t, e.Value("message"), "more than "+strconv.Itoa(limit))
	h.none(ex)
	assert.False(t, h.fx.closed[ex], "the connection stays open")

	h.send(ex, "heartbeat", "seq", "2", "running", unknownTokens(limit))
	h.expect(ex, "pong")
	assert.Len(t, h.drain(ex), limit, "at the limit, every unknown dispatch gets its cancel")
}

// One heartbeat gets at most maxUnknownCancels cancels for dispatches
// that are not the executor's, and none while it has not read its
// output; the dispatches held back are cancelled when listed again.
func TestCore_HeartbeatCancelsBounded(t *testing.T) {
	h := newHarness(t)
	ex := h.executor("e1", "x", 4096)
	h.heartbeat(ex, unknownTokens(3000))
	got := h.drain(ex)
	assert.Len(t, got, maxUnknownCancels)
	for _, m := range got {
		require.Equal(t, "cancel", m.Type())
	}

	blocked := backlogRecorder{recorder: h.fx, blocked: map[PeerID]bool{ex: true}}
	h.c.fx = blocked
	a := h.submit(h.client(), "task_type", "x")
	id, v := h.task(ex)
	require.Equal(t, a, id)
	h.heartbeat(ex, unknownTokens(10)+","+itoa(id)+"."+itoa(v))
	h.none(ex)
	assert.Equal(t, Running, h.state(id), "a listed dispatch of its own is still reconciled")
	blocked.blocked[ex] = false
	h.heartbeat(ex, unknownTokens(10)+","+itoa(id)+"."+itoa(v))
	assert.Len(t, h.drain(ex), 10, "cancelled once it reads")
}
