package core

// urgentType is a dirty task type placed by its most urgent pending task,
// for dispatchDirty's order across types: higher priority first, then the
// task that became pending first.
type urgentType struct {
	tt       *taskType
	priority uint8
	seq      uint64
}

func (a urgentType) before(b urgentType) bool {
	if a.priority != b.priority {
		return a.priority > b.priority
	}
	return a.seq < b.seq
}

// pushUrgent places tt by its next task, or, with no task or no free
// executor to match, leaves it out (and no longer dirty).
func (c *Core) pushUrgent(h []urgentType, tt *taskType) []urgentType {
	t := c.nextPending(tt)
	if t == nil || tt.free.top() == nil {
		tt.dirty = false
		return h
	}
	tt.dirty = true // in the heap: markDirty must not list it again
	return pushUrgentEntry(h, urgentType{tt, t.priority, t.seq})
}

// pushUrgentEntry adds u to the binary heap h.
func pushUrgentEntry(h []urgentType, u urgentType) []urgentType {
	h = append(h, u)
	for i := len(h) - 1; i > 0; {
		p := (i - 1) / 2
		if !h[i].before(h[p]) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
	return h
}

// popUrgent removes and returns the most urgent entry of h.
func popUrgent(h []urgentType) (urgentType, []urgentType) {
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	h = h[:last]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(h) && h[l].before(h[m]) {
			m = l
		}
		if r < len(h) && h[r].before(h[m]) {
			m = r
		}
		if m == i {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	return top, h
}
