package core

import "container/heap"

// urgentTypes is dispatchDirty's heap of dirty task types, ordered by the
// most urgent pending task of each (taskType.urgency). Higher priority
// comes first, then the task that became pending first. Its entries are
// pointers, as execHeap's are, so container/heap boxes nothing.
type urgentTypes []*taskType

// urgency is the key a type is placed by in urgentTypes.
type urgency struct {
	priority uint8
	seq      uint64
}

func (h urgentTypes) Len() int { return len(h) }
func (h urgentTypes) Less(i, j int) bool {
	a, b := h[i].urgency, h[j].urgency
	if a.priority != b.priority {
		return a.priority > b.priority
	}
	return a.seq < b.seq
}
func (h urgentTypes) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *urgentTypes) Push(x any)   { *h = append(*h, x.(*taskType)) }
func (h *urgentTypes) Pop() any {
	old := *h
	n := len(old) - 1
	tt := old[n]
	old[n] = nil
	*h = old[:n]
	return tt
}

// pushUrgent places tt by its next task. With no task, or no free executor
// to match, it leaves tt out and no longer dirty.
func (c *Core) pushUrgent(h *urgentTypes, tt *taskType) {
	t := c.nextPending(tt)
	if tt.paused || t == nil || tt.free.top() == nil {
		tt.dirty = false
		return
	}
	tt.dirty = true // in the heap: markDirty must not list it again
	tt.urgency = urgency{t.priority, t.seq}
	heap.Push(h, tt)
}
