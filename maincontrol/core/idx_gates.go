package core

// Task frames wait for what made their task dispatchable, not for their
// own dispatch record (spec section 4). So an executor that holds one task
// at a time gets its next while the disk catches up. A pending task became
// dispatchable by the record that queued it, and every record before that
// one. That record is its submit, a release after its dependencies, a
// requeue, or the end of a retry delay. The task's seq finds it, and each
// enqueue renews the seq. For the enqueues whose records may not be
// durable yet, gates keeps their seqs and their records' log positions.
// Positions are what Effects.Record returns.

// gateSpan says the tasks queued with seqs first to last wait for mark.
type gateSpan struct{ first, last, mark uint64 }

// gates holds spans in seq order (and so in mark order) from head on.
type gates struct {
	spans   []gateSpan
	head    int
	durable uint64 // the log is durable up to here (Core.Durable)
}

// queued notes that the task given seq was queued by the record at mark.
func (g *gates) queued(seq, mark uint64) {
	if mark <= g.durable {
		return
	}
	if n := len(g.spans); n > g.head && g.spans[n-1].mark == mark {
		g.spans[n-1].last = seq // one record queued several tasks
		return
	}
	g.spans = append(g.spans, gateSpan{first: seq, last: seq, mark: mark})
}

// mark returns the log position the task queued with seq waits for, or 0
// if its record is durable.
func (g *gates) mark(seq uint64) uint64 {
	s := g.spans[g.head:]
	lo, hi := 0, len(s)
	for lo < hi { // the first span that ends at or after seq
		m := int(uint(lo+hi) >> 1)
		if s[m].last < seq {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < len(s) && s[lo].first <= seq {
		return s[lo].mark
	}
	return 0
}

// advance drops the spans durable at mark.
func (g *gates) advance(mark uint64) {
	if mark <= g.durable {
		return
	}
	g.durable = mark
	for g.head < len(g.spans) && g.spans[g.head].mark <= mark {
		g.head++
	}
	if g.head == len(g.spans) {
		g.spans, g.head = g.spans[:0], 0
	} else if g.head >= 1024 && g.head >= len(g.spans)/2 {
		n := copy(g.spans, g.spans[g.head:])
		g.spans, g.head = g.spans[:n], 0
	}
}

// Durable tells the core that every record up to position mark (as
// Effects.Record returned it) is durable.
func (c *Core) Durable(mark uint64) { c.gates.advance(mark) }

// dispatchGate is the log position t's task frame to e waits for. It
// covers the record that queued t, and the registration whose registered
// frame must reach e first. It covers the latest shared-state change too,
// since the frame's state_version shows it.
func (c *Core) dispatchGate(t *task, e *executor) uint64 {
	return max(c.gates.mark(t.seq), e.regMark, c.stateMark)
}
