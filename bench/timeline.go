package bench

import "time"

// timeline counts events per second since a start time. Each goroutine
// keeps its own; they are merged at the end.
type timeline struct {
	start  time.Time
	counts []uint64
}

func newTimeline(start time.Time) *timeline { return &timeline{start: start} }

// add counts n events at now.
func (t *timeline) add(now time.Time, n uint64) {
	s := int(now.Sub(t.start) / time.Second)
	if s < 0 {
		s = 0
	}
	for len(t.counts) <= s {
		t.counts = append(t.counts, 0)
	}
	t.counts[s] += n
}

// merge adds o's counts to t's.
func (t *timeline) merge(o *timeline) {
	for len(t.counts) < len(o.counts) {
		t.counts = append(t.counts, 0)
	}
	for i, c := range o.counts {
		t.counts[i] += c
	}
}

// Second is one second of a run: how many tasks were submitted, dispatched
// (arrived at an executor) and done in it.
type Second struct {
	T          int    `json:"t"`
	Submitted  uint64 `json:"submitted"`
	Dispatched uint64 `json:"dispatched"`
	Done       uint64 `json:"done"`
}

// seconds zips timelines into per-second rows, up to the last second in
// which anything happened.
func seconds(sub, disp, done *timeline) []Second {
	n := max(len(sub.counts), len(disp.counts), len(done.counts))
	out := make([]Second, n)
	at := func(t *timeline, i int) uint64 {
		if i < len(t.counts) {
			return t.counts[i]
		}
		return 0
	}
	for i := range out {
		out[i] = Second{T: i, Submitted: at(sub, i), Dispatched: at(disp, i), Done: at(done, i)}
	}
	return out
}
