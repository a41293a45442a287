package core

// The records that change executors and the task types they serve.

// typeFor returns the task type of that name, made on first use.
func (c *Core) typeFor(name string) *taskType {
	tt := c.types[name]
	if tt == nil {
		tt = &taskType{name: name}
		if len(c.paused) > 0 {
			_, tt.paused = c.paused[name]
		}
		c.types[name] = tt
	}
	return tt
}

// releaseType drops one reference to tt, and tt itself with the last:
// no task of it is known and no executor serves it, so its queues and its
// heap of free executors are empty.
func (c *Core) releaseType(tt *taskType) {
	if tt.refs--; tt.refs <= 0 && c.types[tt.name] == tt {
		delete(c.types, tt.name)
	}
}

func (c *Core) markDirty(tt *taskType) {
	if !tt.dirty {
		tt.dirty = true
		c.dirty = append(c.dirty, tt)
	}
}

// execNamed returns the executor a record names: the one its decision
// resolved, else the one registered under that name.
func (c *Core) execNamed(r *record) *executor {
	if e := r.execRef; e != nil {
		return e
	}
	return c.execs[r.exec]
}

func (c *Core) applyExecReg(r *record) {
	e := c.execs[r.exec]
	if e == nil {
		e = &executor{id: r.exec}
		c.execs[r.exec] = e
	} else {
		// Leave the old types' heaps before the types change.
		peer := e.peer
		e.peer = 0
		c.refreshHeaps(e)
		e.peer = peer
	}
	old := e.types
	e.types = make([]*taskType, 0, len(r.types))
	c.typeMark++ // dedupe in one pass: a register may list 100,000 types
	for _, name := range r.types {
		if tt := c.typeFor(name); tt.mark != c.typeMark {
			tt.mark = c.typeMark
			tt.refs++
			e.types = append(e.types, tt)
		}
	}
	for _, tt := range old { // after the new ones: a type kept is not dropped in between
		c.releaseType(tt)
	}
	e.entries = make([]heapEntry, len(e.types))
	for i := range e.entries {
		e.entries[i] = heapEntry{e: e, idx: -1}
	}
	c.regBytes -= e.regBytes
	e.regBytes = regBytes(e.id, func(yield func(string) bool) {
		for _, tt := range e.types {
			if !yield(tt.name) {
				return
			}
		}
	})
	c.regBytes += e.regBytes
	e.slots = int(r.slots)
	c.regSeq++
	e.regSeq = c.regSeq
	c.refreshHeaps(e)
}
