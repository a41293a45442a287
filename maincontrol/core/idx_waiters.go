package core

import "strings"

// waitEntry is one connection's waits for one task's `done`. It holds the
// reqs of its wait=true submits of that task, in order. A connection that
// waits for the same task again (a keyed duplicate) adds a req to its
// entry. So every entry is one (connection, task) pair. Each req still gets
// its own `done`, since `done` carries its submit's req (spec section 3).
//
// Equal reqs in a row are one run. A flood repeating one req costs a
// count, not a copy of the req and a slot per wait.
//
// An entry is linked in its task's list while the task runs. It is in its
// peer's list from its first wait until its last `done` is sent. Either
// end, or the peer closing, unlinks it. The cost does not depend on what
// other peers wait for.
type waitEntry struct {
	task  uint64
	peer  PeerID
	pw    *peerWaits
	runs  []reqRun // the runs before last, in order
	last  reqRun   // the latest run
	n     int      // reqs in every run
	next  int      // reqs already answered (0: none), while being sent
	run   int      // the run of the next req to answer: an index of runs, or len(runs) for last
	off   int      // and how many of that run are answered
	taken bool     // out of its task's list: no more waits join it
	dead  bool     // its peer closed: nothing more to send

	tprev, tnext *waitEntry // the task's waiters, in order of first wait
	pprev, pnext *waitEntry // the peer's entries, in no order
}

// reqRun is n waits in a row with the same req.
type reqRun struct {
	req string
	n   int
}

// reqs counts the entry's waits.
func (e *waitEntry) reqs() int { return e.n }

// join adds a wait with req, copied only when it starts a run.
func (e *waitEntry) join(req string) {
	e.n++
	if e.last.n > 0 && e.last.req == req {
		e.last.n++
		return
	}
	if e.last.n > 0 {
		e.runs = append(e.runs, e.last)
	}
	e.last = reqRun{req: strings.Clone(req), n: 1}
}

// nextReq returns the req of the next wait to answer.
func (e *waitEntry) nextReq() string {
	if e.run < len(e.runs) {
		return e.runs[e.run].req
	}
	return e.last.req
}

// step moves past the next wait, answered.
func (e *waitEntry) step() {
	e.next++
	e.off++
	if e.run < len(e.runs) && e.off == e.runs[e.run].n {
		e.run, e.off = e.run+1, 0
	}
}

// waitKey names the entry of one connection for one task.
type waitKey struct {
	task uint64
	peer PeerID
}

// taskWaiters is the list of a task's entries.
type taskWaiters struct{ head, tail *waitEntry }

// waiterSet holds who waits for each task's `done`, each wait counted
// against its peer's cap and the global one (Config.MaxWaits).
type waiterSet struct {
	byTask map[uint64]taskWaiters
	byKey  map[waitKey]*waitEntry
	total  int // waits (reqs) held, in entries waiting or being sent
}

// maxWaitsPerConn caps one connection's waits, below --max-pending and
// --max-waits. Waits are about 260 bytes each, and the same task can be
// waited for again and again through its key. 65,536 is far more than a
// client keeps in flight (a bench producer keeps 1,024).
const maxWaitsPerConn = 1 << 16

// peerWaits is one peer's share of a waiterSet. It holds its waits, and its
// entries, linked through pprev and pnext. last is the entry it joined
// last, so a flood on one task finds it without a lookup.
type peerWaits struct {
	n    int
	head *waitEntry
	last *waitEntry
}

func newWaiterSet() waiterSet {
	return waiterSet{byTask: make(map[uint64]taskWaiters), byKey: make(map[waitKey]*waitEntry)}
}

// add makes peer, whose waits are pw, wait for task id's `done` with req,
// which it copies if it keeps it. A second wait of the same peer for the
// same task joins its entry.
func (ws *waiterSet) add(id uint64, peer PeerID, pw *peerWaits, req string) {
	pw.n++
	ws.total++
	if e := pw.last; e != nil && e.task == id && !e.taken && !e.dead {
		e.join(req)
		return
	}
	k := waitKey{id, peer}
	e := ws.byKey[k]
	if e == nil {
		e = ws.link(k, pw)
	}
	pw.last = e
	e.join(req)
}

// link makes a new entry for k and puts it at the end of its task's list
// and in its peer's.
func (ws *waiterSet) link(k waitKey, pw *peerWaits) *waitEntry {
	e := &waitEntry{task: k.task, peer: k.peer, pw: pw}
	ws.byKey[k] = e
	l := ws.byTask[k.task]
	if l.tail == nil {
		l.head = e
	} else {
		l.tail.tnext, e.tprev = e, l.tail
	}
	l.tail = e
	ws.byTask[k.task] = l
	e.pnext = pw.head
	if pw.head != nil {
		pw.head.pprev = e
	}
	pw.head = e
	return e
}

// waits reports whether peer waits for task id.
func (ws *waiterSet) waits(id uint64, peer PeerID) bool { return ws.byKey[waitKey{id, peer}] != nil }

// take removes the entries of task id from its list and returns the first.
// The rest follow through tnext. They stay counted, and in their peers'
// lists, until release, since their `done` replies are yet to be sent.
func (ws *waiterSet) take(id uint64) *waitEntry {
	if len(ws.byTask) == 0 {
		return nil
	}
	l, ok := ws.byTask[id]
	if !ok {
		return nil
	}
	delete(ws.byTask, id)
	for e := l.head; e != nil; e = e.tnext {
		delete(ws.byKey, waitKey{id, e.peer})
		e.taken = true
	}
	return l.head
}

// release forgets entry e, taken, once its replies are sent or no longer
// can be. What it still counted goes back to its peer and the total.
func (ws *waiterSet) release(e *waitEntry) {
	if e.dead {
		return
	}
	ws.unlinkPeer(e, e.reqs()-e.next)
	e.dead = true
}

// answered counts one more of e's reqs answered.
func (ws *waiterSet) answered(e *waitEntry) {
	e.step()
	e.pw.n--
	ws.total--
}

func (ws *waiterSet) unlinkPeer(e *waitEntry, n int) {
	pw := e.pw
	pw.n -= n
	ws.total -= n
	if pw.last == e {
		pw.last = nil
	}
	if e.pprev != nil {
		e.pprev.pnext = e.pnext
	} else if pw.head == e {
		pw.head = e.pnext
	}
	if e.pnext != nil {
		e.pnext.pprev = e.pprev
	}
	e.pprev, e.pnext = nil, nil
}

// drop forgets the waiters of task id, without replies.
func (ws *waiterSet) drop(id uint64) {
	for e := ws.take(id); e != nil; e = e.tnext {
		ws.release(e)
	}
}

// dropPeer forgets every wait of peer, whose waits are pw. That covers its
// entries still waiting, and entries being sent. It costs the
// peer's own entries, whatever other peers wait for.
func (ws *waiterSet) dropPeer(pw *peerWaits) {
	if pw == nil {
		return
	}
	for e := pw.head; e != nil; {
		next := e.pnext
		if l, ok := ws.byTask[e.task]; ok && ws.byKey[waitKey{e.task, e.peer}] == e {
			// Still waiting, so take it out of its task's list too.
			delete(ws.byKey, waitKey{e.task, e.peer})
			if e.tprev != nil {
				e.tprev.tnext = e.tnext
			} else {
				l.head = e.tnext
			}
			if e.tnext != nil {
				e.tnext.tprev = e.tprev
			} else {
				l.tail = e.tprev
			}
			if l.head == nil {
				delete(ws.byTask, e.task)
			} else {
				ws.byTask[e.task] = l
			}
		}
		n := e.reqs() - e.next
		pw.n -= n
		ws.total -= n
		e.pprev, e.pnext, e.dead = nil, nil, true
		e = next
	}
	pw.head, pw.last = nil, nil
	pw.n = 0
}
