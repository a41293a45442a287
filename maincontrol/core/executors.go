package core

import "container/heap"

// executor is one registered executor. Its registration (id, types, slots)
// is durable. Its connection and liveness are not.
type executor struct {
	id     string
	types  []*taskType
	slots  int
	peer   PeerID // 0 while disconnected
	regSeq uint64 // registration order of the current connection; ties go to the lower
	// regMark is the log position its registered frame waits for. No
	// task frame may pass it.
	regMark uint64
	// load counts tasks dispatched or running on it. tasks holds them with
	// the version of their dispatch.
	load  int
	tasks assignments
	// entries[i] is its entry in types[i].free, with its position there
	// (-1 when not in it).
	entries  []heapEntry
	lastSeen int64
	hbCount  uint64 // heartbeats on this connection
	watched  bool   // has an entry in the liveness heap
	// regBytes is what its registration counts (kept.go). keptGen counts
	// its disconnections, for Core.kept.
	regBytes int
	keptGen  uint64
	// descs are its handlers' descriptions by task type, live only.
	// descBytes is what they count (describe.go).
	descs     map[string]*handlerDesc
	descBytes int
}

// assignment is one dispatch held by an executor. Its fields are live only.
// They are not in records and start afresh after a restart.
type assignment struct {
	ver uint64
	// missed counts consecutive running= lists that left this running task
	// out (the two-lists rule).
	missed uint8
	// restored marks a dispatch that was dispatched or running at a restart and
	// not yet listed by the executor. The two-lists rule exempts it.
	restored bool
	// listed says the current running= list names this dispatch. It is set
	// and cleared within one reconcile.
	listed bool
}

func (e *executor) connected() bool { return e.peer != 0 }

func (e *executor) hasFreeSlot() bool { return e.load < e.slots }

// execHeap orders the executors of one task type that have a free slot.
// Fewest dispatched and running tasks go first, then earliest registration.
type execHeap struct {
	items []*heapEntry
}

// heapEntry is an executor in the heap of one of its types. The heap
// keeps the entry's position in it, so a move needs no search of the
// executor's types. For an executor of many types, that search made every
// dispatch to it cost in proportion to them. Pushing a pointer allocates
// nothing, where a struct would be boxed into heap.Push's any.
type heapEntry struct {
	e   *executor
	idx int
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
	h.items[i].idx = i
	h.items[j].idx = j
}
func (h *execHeap) Push(x any) {
	en := x.(*heapEntry)
	en.idx = len(h.items)
	h.items = append(h.items, en)
}
func (h *execHeap) Pop() any {
	en := h.items[len(h.items)-1]
	h.items[len(h.items)-1] = nil
	h.items = h.items[:len(h.items)-1]
	en.idx = -1
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
		idx := e.entries[i].idx
		switch {
		case want && idx < 0:
			heap.Push(&tt.free, &e.entries[i])
			c.markDirty(tt)
		case want:
			heap.Fix(&tt.free, idx)
		case idx >= 0:
			heap.Remove(&tt.free, idx)
		}
	}
}
