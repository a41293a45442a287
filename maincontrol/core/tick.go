package core

import (
	"container/heap"
	"log/slog"
	"math"
	"strconv"
	"time"
)

// fireTimers runs every timer that is due. Timers are lazily deleted, so
// each is checked against the task's current state, version and due time.
func (c *Core) fireTimers(now int64) {
	for {
		tm, ok := c.timers.popDue(now)
		if !ok {
			return
		}
		t := c.timerTask(tm)
		if t == nil {
			continue
		}
		if tm.kind == timerRestored {
			c.expireRestored(t)
			continue
		}
		switch t.state {
		case Pending:
			if t.flags&flagDelayed != 0 {
				// Its delay ended, so queue it. A record makes replay
				// queue it at the same point and maybe dispatch it.
				r := c.newRecord(recReady)
				r.id, r.at = t.id, now
				c.commit(r)
			}
		case Retrying:
			if t.flags&flagArmed != 0 {
				c.retryNow(t.id, "backoff over")
			}
		case Dispatched:
			if c.awaitsListing(t) {
				continue // restored: waits for its executor's running= list
			}
			e := c.execs[t.execID]
			c.sendCancel(e, t.id, t.version)
			c.obs.StartTimedOut()
			c.requeue(t.id, "start timeout")
		case Running:
			if c.awaitsListing(t) {
				continue // restored: its timeout starts when it is listed
			}
			e := c.execs[t.execID]
			c.sendCancel(e, t.id, t.version)
			c.obs.TimedOut()
			c.failAttempt(t.id, true, false, true, "timeout after "+strconv.FormatUint(t.timeoutMs, 10)+"ms", "", 0, "task timeout")
		}
	}
}

// awaitsListing reports whether t's dispatch was restored after a restart
// and its executor has not listed it yet. Until then only the restored
// timer may take it back (spec section 7).
func (c *Core) awaitsListing(t *task) bool {
	e := c.execs[t.execID]
	if e == nil {
		return false
	}
	a, ok := e.tasks.get(t.id)
	return ok && a.restored && a.ver == t.version
}

// expireRestored handles a dispatch restored after a restart whose executor
// did not list it within one heartbeat timeout.
func (c *Core) expireRestored(t *task) {
	e := c.execs[t.execID]
	if e == nil {
		return
	}
	a, ok := e.tasks.get(t.id)
	if !ok || !a.restored || a.ver != t.version {
		return
	}
	switch t.state {
	case Dispatched:
		c.requeue(t.id, "not listed after restart")
	case Running:
		c.failAttempt(t.id, true, false, true, "not listed by executor "+e.id+" after restart", "", 0, "not listed after restart")
	}
}

// livenessEntry is when an executor is next checked for silence.
type livenessEntry struct {
	at   int64
	exec *executor
}

type livenessHeap []livenessEntry

func (h livenessHeap) Len() int           { return len(h) }
func (h livenessHeap) Less(i, j int) bool { return h[i].at < h[j].at }
func (h livenessHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *livenessHeap) Push(x any)        { *h = append(*h, x.(livenessEntry)) }
func (h *livenessHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// watchLiveness makes sure e has an entry in the liveness heap. Each
// executor has at most one. It is pushed back when it fires early.
func (c *Core) watchLiveness(e *executor) {
	if e.watched {
		return
	}
	e.watched = true
	heap.Push(&c.liveness, livenessEntry{at: e.lastSeen + c.cfg.HeartbeatTimeout.Milliseconds(), exec: e})
}

// checkLiveness declares lost the executors silent for the heartbeat
// timeout. Their dispatched tasks go back to pending. Their running tasks
// are retried, and their connection is closed.
func (c *Core) checkLiveness(now int64) {
	timeout := c.cfg.HeartbeatTimeout.Milliseconds()
	for len(c.liveness) > 0 && c.liveness[0].at <= now {
		e := heap.Pop(&c.liveness).(livenessEntry).exec
		e.watched = false
		if c.execs[e.id] != e {
			continue // already gone
		}
		if deadline := e.lastSeen + timeout; deadline > now {
			e.watched = true
			heap.Push(&c.liveness, livenessEntry{at: deadline, exec: e})
			continue
		}
		c.loseExecutor(e)
	}
}

// Stalled tells the core that it could not run for d. The server's loop,
// or the whole process, was held up. Frames from executors may have
// waited unread all that time, so d is not counted as their silence. A
// stall must not turn into lost executors and failed tasks.
func (c *Core) Stalled(d time.Duration) {
	ms := d.Milliseconds()
	if ms <= 0 {
		return
	}
	for _, e := range c.execs {
		e.lastSeen += ms
	}
}

func (c *Core) loseExecutor(e *executor) {
	c.obs.ExecutorLost()
	c.logLimited(slog.LevelWarn, "executor lost: nothing arrived within the heartbeat timeout", "executor", e.id,
		"timeout", c.cfg.HeartbeatTimeout, "tasks", e.tasks.len())
	c.takeBackAll(e, false, "executor "+e.id+" lost")
	if p := c.peers[e.peer]; p != nil {
		c.closePeer(p)
	}
	r := c.newRecord(recExecGone)
	r.exec, r.why = e.id, "lost"
	c.commit(r)
}

// maxDropPerRecord bounds one retention record.
const maxDropPerRecord = 4096

// applyRetention forgets terminal tasks past --retention, beyond the
// newest --retention-max, or while they hold more than
// --retention-max-bytes, oldest ended first. The bytes never take the
// newest ended task, however large. Its key must outlive its client's
// retry of the submit (spec section 5). One task is at most two frames.
func (c *Core) applyRetention(now int64) {
	keep := c.cfg.Retention.Milliseconds()
	terminal := c.terminal()
	for {
		r := c.newRecord(recDrop)
		r.at = now
		var freed int64 // bytes of the tasks in r
		for c.retention.len() > 0 && len(r.ids) < maxDropPerRecord {
			t := c.endOf(c.retention.peek())
			if t == nil {
				c.retention.pop()
				continue
			}
			overBytes := terminal-len(r.ids) > 1 && c.retainedOver(freed)
			if terminal-len(r.ids) <= c.cfg.RetentionMax && t.updatedMs+keep > now && !overBytes {
				break
			}
			c.retention.pop()
			r.ids = append(r.ids, t.id)
			freed += t.bytes()
		}
		if len(r.ids) == 0 {
			return
		}
		n := len(r.ids)
		c.commit(r)
		terminal -= n
	}
}

// NextTickAt returns when Tick next has work, in ms of the core's clock.
// An idle server sleeps until then. That is the earliest timer (delay,
// retry, start or task timeout, restored dispatch), liveness check,
// handshake deadline or retention expiry. It returns math.MinInt64 when
// work waits already. Examples are done replies queued for the next ticks'
// budgets, or retention over its count or bytes. It returns ok false when
// nothing is scheduled, as only an input can give Tick work then. It
// reads no clock, so that a server may ask after every input.
func (c *Core) NextTickAt() (at int64, ok bool) {
	at = math.MaxInt64
	take := func(t int64) {
		at, ok = min(at, t), true
	}
	if c.dones.len() > 0 {
		return math.MinInt64, true
	}
	if len(c.timers) > 0 {
		take(c.timers[0].at) // a stale entry costs one idle tick
	}
	if len(c.liveness) > 0 {
		take(c.liveness[0].at)
	}
	if len(c.hsQueue) > 0 {
		take(c.hsQueue[0].at)
	}
	if pa, pok := c.policyDue(); pok {
		take(pa)
	}
	if c.schedWake != math.MaxInt64 {
		take(c.schedWake)
	}
	if c.retention.len() > 0 {
		t := c.endOf(c.retention.peek())
		terminal := c.terminal()
		if t == nil || terminal > c.cfg.RetentionMax || terminal > 1 && c.retainedOver(0) {
			take(math.MinInt64)
		} else {
			take(t.updatedMs + c.cfg.Retention.Milliseconds())
		}
	}
	return at, ok
}
