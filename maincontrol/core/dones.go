package core

import "github.com/apollo11/apollo11/wire"

// Sending `done`. A task may have many waiters. Every connection may wait
// for it, 65,536 times each through its key. Each `done` carries the
// task's outputs, up to a frame. Sent at once, they would stall the loop
// and buffer without bound. So each tick sends at most doneFramesPerTick
// frames and doneBytesPerTick bytes, a few per waiting connection in turn.
// The rest wait in a queue. A connection whose unsent output is already
// large (Backlog) is skipped until it reads. A tick's budget holds the loop
// for a few ms at most: every other peer waits for it. At a tick every
// TickInterval (20 ms) that is still 200,000 replies a second.

const (
	doneFramesPerTick = 4_096
	doneBytesPerTick  = 2 << 20
	// doneBurst is how many of one entry's replies go out in one turn.
	doneBurst = 64
	// doneScanPerTick bounds the queued entries looked at in one tick,
	// so that entries of connections that do not read cost little.
	doneScanPerTick = 16_384
)

// Backlog may be implemented by Effects. Backlogged reports whether peer,
// or all peers together, hold too much unsent output. Then optional output
// to peer should wait. Examples are a `done` that can wait, or a `cancel`
// for a dispatch the core does not know.
type Backlog interface {
	Backlogged(peer PeerID) bool
}

// doneJob is what every `done` of one ended task carries besides its req.
type doneJob struct {
	id      uint64
	state   State
	out     string
	outKeys int
	errText string
}

func jobOf(t *task) doneJob {
	out, n := t.out()
	return doneJob{id: t.id, state: t.state, out: out, outKeys: n, errText: t.errText()}
}

// doneQueue holds the entries whose replies wait for a later tick.
type doneQueue struct {
	buf  []queuedDone
	head int
}

type queuedDone struct {
	e   *waitEntry
	job *doneJob
}

func (q *doneQueue) len() int { return len(q.buf) - q.head }

func (q *doneQueue) push(d queuedDone) { q.buf = append(q.buf, d) }

func (q *doneQueue) pop() queuedDone {
	d := q.buf[q.head]
	q.buf[q.head] = queuedDone{}
	q.head++
	if q.head == len(q.buf) {
		q.buf, q.head = q.buf[:0], 0
	} else if q.head >= 1024 && q.head >= len(q.buf)/2 {
		n := copy(q.buf, q.buf[q.head:])
		clear(q.buf[n:])
		q.buf, q.head = q.buf[:n], 0
	}
	return d
}

// notifyDone sends `done` to everyone waiting for t, as far as this
// tick's budget goes. The rest are queued for the next ticks.
func (c *Core) notifyDone(t *task) {
	e := c.waiters.take(t.id)
	if e == nil {
		return
	}
	job := jobOf(t)
	var queued *doneJob // allocated for the first entry left for later
	for next := e; next != nil; {
		e, next = next, next.tnext
		e.tprev, e.tnext = nil, nil
		if c.serveDone(e, &job) {
			continue
		}
		if queued == nil {
			queued = new(doneJob)
			*queued = job
		}
		c.dones.push(queuedDone{e: e, job: queued})
	}
}

// flushDones sends queued replies within this tick's budget.
func (c *Core) flushDones() {
	for scans := 0; c.dones.len() > 0 && scans < doneScanPerTick && c.doneRoom(); scans++ {
		d := c.dones.pop()
		if !c.serveDone(d.e, d.job) {
			c.dones.push(d)
		}
	}
}

// refillDones starts a tick's budget.
func (c *Core) refillDones() {
	c.doneFrames, c.doneBytes = doneFramesPerTick, doneBytesPerTick
}

func (c *Core) doneRoom() bool { return c.doneFrames > 0 && c.doneBytes > 0 }

// serveDone sends e up to doneBurst of its replies. It reports whether e
// is finished, with every reply sent or its peer gone.
func (c *Core) serveDone(e *waitEntry, job *doneJob) bool {
	if e.dead || c.peers[e.peer] == nil {
		c.waiters.release(e)
		return true
	}
	if !c.doneRoom() || c.backlogged(e.peer) {
		return false
	}
	for i := 0; i < doneBurst && e.next < e.reqs() && c.doneRoom(); i++ {
		n := c.sendDone(e.peer, e.nextReq(), job)
		c.waiters.answered(e)
		c.doneFrames--
		c.doneBytes -= n
	}
	if e.next < e.reqs() {
		return false
	}
	c.waiters.release(e)
	return true
}

func (c *Core) backlogged(peer PeerID) bool {
	b, ok := c.fx.(Backlog)
	return ok && b.Backlogged(peer)
}

// sendDone sends one `done` and returns its size.
func (c *Core) sendDone(peer PeerID, req string, j *doneJob) int {
	b := c.begin(wire.KindDone, req)
	b.UintK(kTaskID, j.id)
	b.StrK(kState, j.state.String())
	b.RawString(j.out, j.outKeys)
	if j.errText != "" {
		b.StrK(kError, j.errText)
	}
	return c.confirm(peer, &b)
}
