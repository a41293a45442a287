// pendingq.go is how pending tasks enter and leave their type's queues,
// and how retries are armed.

package core

// makePending queues a task that just became pending, or starts its delay
// timer if its delay has not ended.
func (c *Core) makePending(t *task, now int64) {
	if t.dueMs > now {
		t.flags |= flagDelayed
		c.addTimer(timer{at: t.dueMs, id: t.id, ver: t.version, kind: timerDue})
		return
	}
	t.flags &^= flagDelayed
	t.dueMs = 0
	c.enqueue(t)
}

// enqueue puts a pending task at the back of its type and priority queue.
func (c *Core) enqueue(t *task) {
	t.seq = c.nextSeq()
	c.gates.queued(t.seq, c.lastMark)
	t.typ.enqueue(t)
	t.typ.pending++
	c.markDirty(t.typ)
}

// unqueue takes a pending task out of its queue. The first live entry is
// popped, as dispatch always takes that one. Others are left stale.
func (c *Core) unqueue(t *task) {
	tt := t.typ
	q := tt.queues[t.priority] // made when t was queued
	e := qent{id: t.id, ver: t.version}
	if q.len() == 0 || q.peek() != e {
		// Dispatch takes the head nextPending just checked, so mostly
		// there is nothing stale to drop first.
		c.dropStaleHead(q)
	}
	if q.len() > 0 && q.peek() == e {
		q.pop()
	} else {
		q.stale++
		q.compact(c.validEntry)
	}
	tt.pending--
}

func (c *Core) validEntry(e qent) bool {
	t := c.tasks.get(e.id)
	return t != nil && t.state == Pending && t.version == e.ver && t.flags&flagDelayed == 0
}

func (c *Core) dropStaleHead(q *fifo) {
	for q.len() > 0 && !c.validEntry(q.peek()) {
		q.pop()
		if q.stale > 0 {
			q.stale--
		}
	}
}

// arm starts a retrying task's backoff (due > 0), or puts it in line
// behind the retry cap (due == 0).
func (c *Core) arm(t *task, due int64) {
	t.dueMs = due
	if due == 0 {
		t.flags &^= flagArmed
		c.retryWait.push(qent{id: t.id, ver: t.version})
		return
	}
	t.flags |= flagArmed
	c.armed++
	c.addTimer(timer{at: due, id: t.id, ver: t.version, kind: timerDue})
}

// disarm undoes arm's count when a task leaves retrying.
func (c *Core) disarm(t *task) {
	if t.flags&flagArmed != 0 {
		t.flags &^= flagArmed
		c.armed--
	}
}
