package core

import (
	"strconv"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// reqsOf lists the reqs of the entries taken for a task, in order.
func reqsOf(ws *waiterSet, id uint64) []string {
	var got []string
	for e := ws.take(id); e != nil; e = e.tnext {
		for range e.reqs() {
			got = append(got, e.nextReq())
			ws.answered(e)
		}
		ws.release(e)
	}
	return got
}

func TestWaiterSet(t *testing.T) {
	pws := map[PeerID]*peerWaits{1: {}, 2: {}, 9: {}}
	tests := []struct {
		name string
		add  [][2]string // peer, req
		drop bool
		want []string
	}{
		{name: "none"},
		{name: "one", add: [][2]string{{"1", "a"}}, want: []string{"a"}},
		{name: "several; a peer's own waits together", add: [][2]string{{"1", "a"}, {"2", "b"}, {"1", "c"}},
			want: []string{"a", "c", "b"}},
		{name: "dropped", add: [][2]string{{"1", "a"}, {"2", "b"}}, drop: true},
		{name: "runs of equal reqs, in order", add: [][2]string{{"1", "a"}, {"1", "a"}, {"1", "b"}, {"1", "a"}, {"2", "c"}, {"1", "a"}},
			want: []string{"a", "a", "b", "a", "a", "c"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := newWaiterSet()
			ws.add(99, 9, pws[9], "other task")
			for _, a := range tt.add {
				p, _ := strconv.Atoi(a[0])
				ws.add(7, PeerID(p), pws[PeerID(p)], a[1])
			}
			if tt.drop {
				ws.drop(7)
			}
			assert.Equal(t, tt.want, reqsOf(&ws, 7))
			assert.Empty(t, reqsOf(&ws, 7), "taken once")
			assert.Equal(t, []string{"other task"}, reqsOf(&ws, 99), "other tasks untouched")
			assert.Empty(t, ws.byTask)
			assert.Empty(t, ws.byKey)
			assert.Zero(t, ws.total)
			for peer, pw := range pws {
				assert.Zero(t, pw.n, "peer %d: every count back to nothing", peer)
				assert.Nil(t, pw.head, "peer %d: no entry left", peer)
			}
		})
	}
}

// dropPeer forgets one peer's waits, keeps the others in order, and
// leaves no count behind, for entries waiting and entries being sent.
func TestWaiterSet_DropPeer(t *testing.T) {
	ws := newWaiterSet()
	pws := map[PeerID]*peerWaits{1: {}, 2: {}, 3: {}}
	ws.add(7, 1, pws[1], "a1")
	ws.add(7, 2, pws[2], "b")
	ws.add(7, 1, pws[1], "a2")
	ws.add(7, 3, pws[3], "c")
	ws.add(8, 1, pws[1], "a1")
	ws.add(9, 2, pws[2], "b")
	ws.add(10, 1, pws[1], "sending")
	sending := ws.take(10)
	assert.Equal(t, 4, pws[1].n)
	assert.Equal(t, 7, ws.total)
	ws.dropPeer(pws[1])
	assert.Zero(t, pws[1].n)
	assert.True(t, sending.dead, "an entry being sent is dropped too")
	assert.Equal(t, []string{"b", "c"}, reqsOf(&ws, 7), "the others, in order")
	_, ok := ws.byTask[8]
	assert.False(t, ok, "a task only peer 1 waited for has no entry left")
	assert.Equal(t, 1, pws[2].n)
	ws.drop(9)
	for peer, pw := range pws {
		assert.Zero(t, pw.n, "peer %d: every count back to nothing", peer)
	}
	assert.Empty(t, ws.byTask)
	assert.Empty(t, ws.byKey)
	assert.Zero(t, ws.total)
}

// One connection waiting for one task many times holds one entry, and
// closing it touches only its own entries: before, every close rescanned
// the other connections' waits once per wait of its own, and four
// connections with 65,536 waits each on one task froze the loop for
// seconds when they closed.
func TestWaiterSet_OneEntryPerConnectionAndTask(t *testing.T) {
	ws := newWaiterSet()
	pws := []*peerWaits{{}, {}, {}, {}}
	for i := range 4 * 65_536 {
		p := i % 4
		ws.add(7, PeerID(p+1), pws[p], "r")
	}
	assert.Len(t, ws.byKey, 4)
	assert.Equal(t, 4*65_536, ws.total)
	for p, pw := range pws {
		assert.Equal(t, 65_536, pw.n)
		require.NotNil(t, pw.head)
		assert.Nil(t, pw.head.pnext, "peer %d: one entry", p+1)
		assert.Empty(t, pw.head.runs, "peer %d: one run of equal reqs", p+1)
		assert.Equal(t, 65_536, pw.head.last.n)
	}
	ws.dropPeer(pws[0])
	assert.Equal(t, 3*65_536, ws.total)
	assert.Len(t, ws.byKey, 3)
	got := reqsOf(&ws, 7)
	assert.Len(t, got, 3*65_536, "every other wait still answered")
}

// A wait for a task whose entries were taken (its `done` replies being
// sent) starts a new entry: the taken one's replies are already under way.
func TestWaiterSet_WaitAfterTakeStartsAnEntry(t *testing.T) {
	ws := newWaiterSet()
	pw := &peerWaits{}
	ws.add(7, 1, pw, "a")
	sending := ws.take(7)
	ws.add(7, 1, pw, "b")
	ws.add(7, 1, pw, "b")
	assert.Equal(t, 1, sending.reqs(), "the taken entry keeps what it had")
	assert.Equal(t, []string{"b", "b"}, reqsOf(&ws, 7))
	ws.answered(sending)
	ws.release(sending)
	assert.Zero(t, pw.n)
	assert.Zero(t, ws.total)
	assert.Nil(t, pw.head)
}

// A kept req is a copy: the caller's is borrowed from the read buffer.
func TestWaiterSet_CopiesReqs(t *testing.T) {
	ws := newWaiterSet()
	pw := &peerWaits{}
	buf := []byte("r1")
	ws.add(7, 1, pw, string(buf)) // a copy here; the next adds borrow
	borrowed := unsafe.String(unsafe.SliceData(buf), len(buf))
	ws.add(7, 1, pw, borrowed)
	buf[1] = '2'
	ws.add(7, 1, pw, borrowed)
	buf[1] = '3'
	assert.Equal(t, []string{"r1", "r1", "r2"}, reqsOf(&ws, 7))
}
