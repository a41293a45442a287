package core

import "time"

// history keeps the latest task transitions of all tasks, for the
// dashboard's task page. The core keeps no history per task, and the log
// is cut at every snapshot. One ring for all tasks bounds the memory. A
// busy system keeps less history per task than a quiet one.

// historySize is how many transitions the ring holds (about 1 MiB).
const historySize = 16_384

// Transition is one change of a task's state, as the decision made it.
// Replayed changes are not kept, so a restart starts the history anew.
type Transition struct {
	AtMs     int64 // Unix ms
	Version  uint64
	Attempt  uint32
	From, To State // From is 0 for the submit that made the task
	Executor string
}

// At is when the transition happened.
func (t Transition) At() time.Time { return time.UnixMilli(t.AtMs) }

type historyEntry struct {
	id uint64
	tr Transition
}

// history is a ring that grows by doubling up to historySize. So an idle
// main control holds none of it.
type history struct {
	ring []historyEntry
	next int // where the next entry goes, once the ring is full
}

func (h *history) add(id uint64, tr Transition) {
	if len(h.ring) < historySize {
		if len(h.ring) == cap(h.ring) {
			grown := make([]historyEntry, len(h.ring), min(historySize, max(64, 2*cap(h.ring))))
			copy(grown, h.ring)
			h.ring = grown
		}
		h.ring = append(h.ring, historyEntry{id, tr})
		return
	}
	h.ring[h.next] = historyEntry{id, tr}
	h.next = (h.next + 1) % historySize
}

// TaskHistory returns the transitions of task id still in the ring,
// oldest first. It reads only.
func (c *Core) TaskHistory(id uint64) []Transition {
	var out []Transition
	n := len(c.hist.ring)
	for i := range n {
		e := &c.hist.ring[(c.hist.next+i)%n]
		if e.id == id {
			out = append(out, e.tr)
		}
	}
	return out
}
