package core

// waiter is a peer waiting for a task's `done`, with the req of its
// submit.
type waiter struct {
	peer PeerID
	req  string
}

// waiterSet holds who waits for each task's `done`. Nearly every task
// waited for has one waiter, its submitter; that one is kept in a map of
// values, and only later ones (duplicate submits with wait=true) in a
// second map of slices, so the common case allocates no slice per task.
type waiterSet struct {
	first map[uint64]waiter
	more  map[uint64][]waiter
}

func newWaiterSet() waiterSet {
	return waiterSet{first: make(map[uint64]waiter), more: make(map[uint64][]waiter)}
}

// add appends w to the waiters of task id.
func (ws *waiterSet) add(id uint64, w waiter) {
	if _, ok := ws.first[id]; !ok {
		ws.first[id] = w
		return
	}
	ws.more[id] = append(ws.more[id], w)
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
	fn(w)
	if len(ws.more) == 0 {
		return
	}
	rest := ws.more[id]
	delete(ws.more, id)
	for _, w := range rest {
		fn(w)
	}
}

// drop forgets the waiters of task id.
func (ws *waiterSet) drop(id uint64) {
	delete(ws.first, id)
	delete(ws.more, id)
}
