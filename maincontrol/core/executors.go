package core

import "container/heap"

// executor is one registered executor. Its registration (id, types, slots)
// is durable; its connection and liveness are not.
type executor struct {
	id     string
	types  []*taskType
	slots  int
	peer   PeerID // 0 while disconnected
	regSeq uint64 // registration order of the current connection; ties go to the lower
	// load counts tasks dispatched or running on it; tasks holds them with
	// the version of their dispatch.
	load  int
	tasks assignments
	// heapIdx[i] is its position in types[i].free, or -1.
	heapIdx  []int
	lastSeen int64
	hbCount  uint64 // heartbeats on this connection
	watched  bool   // has an entry in the liveness heap
}

// assignment is one dispatch held by an executor. Its fields are live only:
// they are not in records and start afresh after a restart.
type assignment struct {
	ver uint32
	// missed counts consecutive running= lists that left this running task
	// out (the two-lists rule).
	missed uint8
	// restored: dispatched or running when the main control restarted and
	// not yet listed by the executor; exempt from the two-lists rule.
	restored bool
	// listed: the current running= list names this dispatch; set and
	// cleared within one reconcile.
	listed bool
}

func (e *executor) connected() bool { return e.peer != 0 }

func (e *executor) hasFreeSlot() bool { return e.load < e.slots }

// execHeap orders the executors of one task type that have a free slot:
// fewest dispatched and running tasks first, then earliest registration.
type execHeap struct {
	items []heapEntry
	typ   *taskType
}

// heapEntry is an executor in the heap of its ti-th type (e.types[ti]):
// moving it updates e.heapIdx[ti] with no search of e.types, which for an
// executor of many types made every move, and so every dispatch to it,
// cost in proportion to its types (a register of 135,000 types took 7 s).
type heapEntry struct {
	e  *executor
	ti int
}

func (h *execHeap) Len() int { return len(h.items) }
func (h *execHeap) Less(i, j int) bool {
	a, b := h.items[i].e, h.items[j].e
	if a.load != b.load {
		return a.load < b.load
	}
	return a.regSeq < b.regSeq
}
func (h *execHeap) Swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	h.items[i].e.heapIdx[h.items[i].ti] = i
	h.items[j].e.heapIdx[h.items[j].ti] = j
}
func (h *execHeap) Push(x any) {
	en := x.(heapEntry)
	en.e.heapIdx[en.ti] = len(h.items)
	h.items = append(h.items, en)
}
func (h *execHeap) Pop() any {
	en := h.items[len(h.items)-1]
	h.items = h.items[:len(h.items)-1]
	en.e.heapIdx[en.ti] = -1
	return en
}

func (h *execHeap) top() *executor {
	if len(h.items) == 0 {
		return nil
	}
	return h.items[0].e
}

// refreshHeaps puts e in, moves it within, or takes it out of the free
// heap of each of its types, after its load or connection changed. Types
// whose heap gained an executor are marked dirty for dispatch.
func (c *Core) refreshHeaps(e *executor) {
	want := e.connected() && e.hasFreeSlot()
	for i, tt := range e.types {
		idx := e.heapIdx[i]
		switch {
		case want && idx < 0:
			heap.Push(&tt.free, heapEntry{e: e, ti: i})
			c.markDirty(tt)
		case want:
			heap.Fix(&tt.free, idx)
		case idx >= 0:
			heap.Remove(&tt.free, idx)
		}
	}
}
