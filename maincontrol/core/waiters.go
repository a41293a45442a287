package core

import "slices"

// waiter is a peer waiting for a task's `done`, with the req of its
// submit, and the peer's count of waits.
type waiter struct {
	peer PeerID
	req  string
	pw   *peerWaits
}

// waiterSet holds who waits for each task's `done`. Nearly every task
// waited for has one waiter, its submitter; that one is kept in a map of
// values, and only later ones (duplicate submits with wait=true) in a
// second map of slices, so the common case allocates no slice per task.
//
// Each peer's waits are also counted, with the tasks they wait on (in the
// peer's peerWaits, reached from the waiter and the peer without a map),
// so that a closed connection's waiters are dropped at once (a task that
// never ends would otherwise keep them forever) and a peer's waits can be
// capped.
type waiterSet struct {
	first map[uint64]waiter
	more  map[uint64][]waiter
}

// maxWaitsPerConn caps one connection's waits, below --max-pending (one
// million by default): waits are about 120 bytes each, and nothing else
// bounds them when a connection waits for the same task again and again
// through its key. Ending a task then sent every wait its `done` in one
// go: four connections with a million waits each held the loop for over
// a second, and were closed as not reading while they read. 65,536 is far
// more than a client keeps in flight (the bench keeps 1,024 a producer),
// holds about 8 MiB, and makes the `done` replies one connection gets
// when a task ends about 3 MB when the task has no outputs.
const maxWaitsPerConn = 1 << 16

// peerWaits is one peer's share of a waiterSet. ids may hold tasks whose
// waiter was taken since: it is filtered when it grows past four times n,
// and emptied when n reaches 0.
type peerWaits struct {
	n   int
	ids []uint64
}

func newWaiterSet() waiterSet {
	return waiterSet{first: make(map[uint64]waiter), more: make(map[uint64][]waiter)}
}

// add appends w, whose pw is its peer's, to the waiters of task id.
func (ws *waiterSet) add(id uint64, w waiter) {
	if _, ok := ws.first[id]; !ok {
		ws.first[id] = w
	} else {
		ws.more[id] = append(ws.more[id], w)
	}
	pw := w.pw
	pw.n++
	if len(pw.ids) >= 4*pw.n+256 {
		// Sorted, so that each task is checked once: waits scans the
		// task's later waiters, which may be many (duplicate submits
		// with wait=true). Every 3n+256 adds: a few lookups per add.
		slices.Sort(pw.ids)
		live := pw.ids[:0]
		for i, x := range pw.ids {
			if (i == 0 || x != pw.ids[i-1]) && ws.waits(x, w.peer) {
				live = append(live, x)
			}
		}
		pw.ids = live
	}
	pw.ids = append(pw.ids, id)
}

// waits reports whether peer waits for task id.
func (ws *waiterSet) waits(id uint64, peer PeerID) bool {
	if w, ok := ws.first[id]; !ok {
		return false
	} else if w.peer == peer {
		return true
	}
	for _, w := range ws.more[id] {
		if w.peer == peer {
			return true
		}
	}
	return false
}

// release counts one waiter of w's peer gone.
func (w *waiter) release() {
	if w.pw.n--; w.pw.n <= 0 {
		w.pw.n, w.pw.ids = 0, w.pw.ids[:0]
	}
}

// take removes the waiters of task id and calls fn for each, in the order
// they were added.
func (ws *waiterSet) take(id uint64, fn func(waiter)) {
	if len(ws.first) == 0 {
		return
	}
	w, ok := ws.first[id]
	if !ok {
		return
	}
	delete(ws.first, id)
	w.release()
	fn(w)
	if len(ws.more) == 0 {
		return
	}
	rest := ws.more[id]
	delete(ws.more, id)
	for _, w := range rest {
		w.release()
		fn(w)
	}
}

// drop forgets the waiters of task id.
func (ws *waiterSet) drop(id uint64) { ws.take(id, func(waiter) {}) }

// dropPeer forgets every waiter of peer, whose waits are pw, keeping the
// others in order.
func (ws *waiterSet) dropPeer(peer PeerID, pw *peerWaits) {
	if pw == nil || pw.n == 0 {
		return
	}
	for _, id := range pw.ids {
		first, ok := ws.first[id]
		if !ok {
			continue
		}
		rest := ws.more[id]
		kept := rest[:0]
		for _, w := range rest {
			if w.peer != peer {
				kept = append(kept, w)
			}
		}
		clear(rest[len(kept):]) // no stale req strings behind the kept ones
		if first.peer == peer {
			if len(kept) == 0 {
				delete(ws.first, id)
			} else {
				ws.first[id], kept = kept[0], kept[1:]
			}
		}
		if len(kept) == 0 {
			delete(ws.more, id)
		} else {
			ws.more[id] = kept
		}
	}
	pw.n, pw.ids = 0, nil
}
