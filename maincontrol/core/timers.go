package core

import "container/heap"

// timerKind says what a timer entry is for. Entries are never removed when
// their reason goes away; they are checked when they fire (lazy deletion).
type timerKind uint8

const (
	timerDue      timerKind = iota + 1 // delay end, retry time, start or task deadline: see task.dueMs
	timerRestored                      // restored dispatch not listed in time
)

type timer struct {
	at   int64
	id   uint64
	ver  uint32
	kind timerKind
}

// timerHeap is a min-heap of timers by time, then id.
type timerHeap []timer

func (h timerHeap) Len() int { return len(h) }
func (h timerHeap) Less(i, j int) bool {
	if h[i].at != h[j].at {
		return h[i].at < h[j].at
	}
	return h[i].id < h[j].id
}
func (h timerHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *timerHeap) Push(x any)   { *h = append(*h, x.(timer)) }
func (h *timerHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

func (h *timerHeap) add(t timer) { heap.Push(h, t) }

// popDue removes and returns the earliest timer if it is due at now.
func (h *timerHeap) popDue(now int64) (timer, bool) {
	if len(*h) == 0 || (*h)[0].at > now {
		return timer{}, false
	}
	return heap.Pop(h).(timer), true
}
