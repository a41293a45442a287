package core

// timerKind says what a timer entry is for. Entries are never removed when
// their reason goes away. They are checked when they fire (lazy deletion).
type timerKind uint8

const (
	timerDue      timerKind = iota + 1 // delay end, retry time, start or task deadline: see task.dueMs
	timerRestored                      // restored dispatch not listed in time
)

type timer struct {
	at   int64
	id   uint64
	ver  uint64
	kind timerKind
}

// timerHeap is a min-heap of timers by time, then id. It is sifted by
// hand rather than with container/heap, whose Push and Pop box every timer
// in an interface: an allocation per dispatch.
type timerHeap []timer

func (h timerHeap) less(i, j int) bool {
	if h[i].at != h[j].at {
		return h[i].at < h[j].at
	}
	return h[i].id < h[j].id
}

func (h *timerHeap) add(t timer) {
	*h = append(*h, t)
	s := *h
	for i := len(s) - 1; i > 0; {
		p := (i - 1) / 2
		if !s.less(i, p) {
			break
		}
		s[i], s[p] = s[p], s[i]
		i = p
	}
}

// compact drops every entry live reports dead and restores the heap order.
func (h *timerHeap) compact(live func(timer) bool) {
	s := (*h)[:0]
	for _, t := range *h {
		if live(t) {
			s = append(s, t)
		}
	}
	clear((*h)[len(s):])
	for i := len(s)/2 - 1; i >= 0; i-- {
		s.down(i)
	}
	*h = s
}

// down sifts entry i towards the leaves.
func (h timerHeap) down(i int) {
	n := len(h)
	for {
		m := 2*i + 1
		if m >= n {
			return
		}
		if r := m + 1; r < n && h.less(r, m) {
			m = r
		}
		if !h.less(m, i) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// popDue removes and returns the earliest timer if it is due at now.
func (h *timerHeap) popDue(now int64) (timer, bool) {
	s := *h
	if len(s) == 0 || s[0].at > now {
		return timer{}, false
	}
	top := s[0]
	n := len(s) - 1
	s[0] = s[n]
	s = s[:n]
	s.down(0)
	*h = s
	return top, true
}

// minTimerCompaction is the heap size below which dead entries are left to
// be popped. Compacting a small heap gains nothing.
const minTimerCompaction = 4096

// addTimer adds a timer. Lazy deletion leaves an entry behind for every
// dispatch that ended before its deadline. At high throughput the heap
// would hold a start and a task deadline per task for a whole timeout,
// millions of entries. So when the heap has doubled since the last
// compaction, dead entries are dropped. That costs O(1) amortized per add,
// and bounds the heap to about twice its live entries.
func (c *Core) addTimer(t timer) {
	c.timers.add(t)
	if len(c.timers) < max(c.timersCompactAt, minTimerCompaction) {
		return
	}
	c.timers.compact(c.timerLive)
	c.timersCompactAt = 2 * len(c.timers)
}

// timerTask returns the task tm may still act on when it fires, or nil
// when tm is dead. A timer is dead when its task is gone or dispatched
// again. It is dead too when its deadline moved, unless it is a restored
// dispatch's timer.
func (c *Core) timerTask(tm timer) *task {
	t := c.tasks.get(tm.id)
	if t == nil || t.version != tm.ver || tm.kind != timerRestored && t.dueMs != tm.at {
		return nil
	}
	return t
}

func (c *Core) timerLive(tm timer) bool { return c.timerTask(tm) != nil }
