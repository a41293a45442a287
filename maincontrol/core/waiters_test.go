package core

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// peerWaiters makes waiters of a few peers, each peer with its own count.
type peerWaiters map[PeerID]*peerWaits

func (pws peerWaiters) w(peer PeerID, req string) waiter {
	if pws[peer] == nil {
		pws[peer] = &peerWaits{}
	}
	return waiter{peer: peer, req: req, pw: pws[peer]}
}

func TestWaiterSet(t *testing.T) {
	taken := func(ws *waiterSet, id uint64) []string {
		var got []string
		ws.take(id, func(w waiter) { got = append(got, w.req) })
		return got
	}
	pws := peerWaiters{}
	a, b, c := pws.w(1, "a"), pws.w(2, "b"), pws.w(1, "c")
	tests := []struct {
		name string
		add  []waiter
		drop bool
		want []string
	}{
		{name: "none"},
		{name: "one", add: []waiter{a}, want: []string{"a"}},
		{name: "several, in order", add: []waiter{a, b, c}, want: []string{"a", "b", "c"}},
		{name: "dropped", add: []waiter{a, b}, drop: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := newWaiterSet()
			ws.add(99, pws.w(9, "other task"))
			for _, w := range tt.add {
				ws.add(7, w)
			}
			if tt.drop {
				ws.drop(7)
			}
			assert.Equal(t, tt.want, taken(&ws, 7))
			assert.Empty(t, taken(&ws, 7), "taken once")
			assert.Equal(t, []string{"other task"}, taken(&ws, 99), "other tasks untouched")
			assert.Empty(t, ws.first)
			assert.Empty(t, ws.more)
			for peer, pw := range pws {
				assert.Zero(t, pw.n, "peer %d: every count back to nothing", peer)
			}
		})
	}
}

// dropPeer forgets one peer's waiters, keeps the others in order, and
// leaves no count behind.
func TestWaiterSet_DropPeer(t *testing.T) {
	ws := newWaiterSet()
	pws := peerWaiters{}
	a1, b, a2, c := pws.w(1, "a1"), pws.w(2, "b"), pws.w(1, "a2"), pws.w(3, "c")
	for _, w := range []waiter{a1, b, a2, c} {
		ws.add(7, w)
	}
	ws.add(8, a1)
	ws.add(9, b)
	assert.Equal(t, 3, pws[1].n)
	ws.dropPeer(1, pws[1])
	assert.Zero(t, pws[1].n)
	var got []string
	ws.take(7, func(w waiter) { got = append(got, w.req) })
	assert.Equal(t, []string{"b", "c"}, got, "the others, in order; the first one replaced")
	_, ok := ws.first[8]
	assert.False(t, ok, "a task only peer 1 waited for has no entry left")
	assert.Equal(t, 1, pws[2].n)
	ws.drop(9)
	for peer, pw := range pws {
		assert.Zero(t, pw.n, "peer %d: every count back to nothing", peer)
	}
	assert.Empty(t, ws.first)
	assert.Empty(t, ws.more)
}

// A peer that keeps some waits open while many end does not grow its list
// of tasks without bound.
func TestWaiterSet_PeerListStaysBounded(t *testing.T) {
	ws := newWaiterSet()
	pws := peerWaiters{}
	ws.add(1, pws.w(5, "long"))
	for id := uint64(2); id < 100_000; id++ {
		ws.add(id, pws.w(5, "r"))
		ws.take(id, func(waiter) {})
	}
	assert.Equal(t, 1, pws[5].n)
	assert.Less(t, len(pws[5].ids), 200)
	ws.dropPeer(5, pws[5])
	assert.Empty(t, ws.first)
}

// The waiters of a connection that closes are dropped: a task that never
// ends does not keep them. A connection's waits are capped at
// --max-pending, however often it waits for the same task.
func TestCore_WaitersOfClosedPeerDropped(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxPending = 5 })
	owner := h.client()
	id := h.submit(owner, "task_type", "nobody", "key", "K")
	cl := h.client()
	for i := range 5 {
		h.send(cl, "submit", "req", "w"+strconv.Itoa(i), "task_type", "nobody", "key", "K", "wait", "true")
		assert.Equal(t, "true", h.expect(cl, "submitted").Value("duplicate"))
	}
	h.send(cl, "submit", "req", "over", "task_type", "nobody", "key", "K", "wait", "true")
	e := h.expect(cl, "error")
	assert.Equal(t, "bad_request", e.Value("code"))
	assert.Contains(t, e.Value("message"), "already waits for 5 done replies")
	pw := h.c.peers[cl].waits
	assert.Equal(t, 5, pw.n)
	h.c.Closed(cl)
	assert.Zero(t, pw.n)
	assert.Empty(t, h.c.waiters.first)
	assert.Empty(t, h.c.waiters.more)

	h.send(owner, "submit", "req", "again", "task_type", "nobody", "key", "K", "wait", "true")
	h.expect(owner, "submitted")
	h.send(owner, "cancel", "req", "c", "task_id", strconv.FormatUint(id, 10))
	assert.Equal(t, "cancelled", h.expect(owner, "done").Value("state"), "other peers still told")
	h.expect(owner, "cancelled")
}

// A connection's waits are capped at 65,536, or --max-pending when lower,
// however often it waits for the same task (docs/protocol.md appendix,
// "Waits per connection"); a refused wait changes nothing.
func TestCore_WaitsPerConnectionCapped(t *testing.T) {
	for _, tc := range []struct {
		maxPending int // 0: the default, a million
		want       int
	}{
		{maxPending: 0, want: 65_536},
		{maxPending: 5, want: 5},
		{maxPending: 65_537, want: 65_536},
	} {
		t.Run("max_pending="+strconv.Itoa(tc.maxPending), func(t *testing.T) {
			h := newHarness(t, func(c *Config) { c.MaxPending = tc.maxPending; c.Unlogged = true })
			owner := h.client()
			id := h.submit(owner, "task_type", "nobody", "key", "K")
			cl := h.client()
			wait := msg("submit", "req", "w", "task_type", "nobody", "key", "K", "wait", "true")
			for i := range tc.want {
				h.c.Handle(cl, wait)
				if i%4096 == 0 {
					h.fx.frames[cl] = nil // the replies are the harness's memory
				}
			}
			h.fx.frames[cl] = nil
			require.Equal(t, tc.want, h.c.peers[cl].waits.n)
			h.send(cl, "submit", "req", "over", "task_type", "nobody", "key", "K", "wait", "true")
			e := h.expect(cl, "error")
			assert.Equal(t, "bad_request", e.Value("code"))
			assert.Equal(t, "over", e.Value("req"))
			assert.Contains(t, e.Value("message"), "already waits for "+strconv.Itoa(tc.want)+" done replies")
			assert.Equal(t, tc.want, h.c.peers[cl].waits.n, "a refused wait changes nothing")

			// Another connection has its own count, and every wait is
			// answered when the task ends.
			h.send(owner, "submit", "req", "again", "task_type", "nobody", "key", "K", "wait", "true")
			h.expect(owner, "submitted")
			h.send(owner, "cancel", "req", "c", "task_id", strconv.FormatUint(id, 10))
			assert.Len(t, h.fx.frames[cl], tc.want)
			assert.Equal(t, "done", h.fx.frames[cl][tc.want-1].Type())
		})
	}
}
