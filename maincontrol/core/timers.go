package core

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
	for i := 0; ; {
		m := 2*i + 1
		if m >= n {
			break
		}
		if r := m + 1; r < n && s.less(r, m) {
			m = r
		}
		if !s.less(m, i) {
			break
		}
		s[i], s[m] = s[m], s[i]
		i = m
	}
	*h = s
	return top, true
}
