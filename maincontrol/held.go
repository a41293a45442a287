package maincontrol

// heldFrame is a frame, or a close when close is set. It waits until the
// log is durable up to lsn.
type heldFrame struct {
	cn         *conn
	start, end int // in heldQueue.arena
	lsn        uint64
	order      uint64 // when it was held, to release both queues in order
	close      bool   // not a frame: close the connection
	confirms   bool   // sent with core.WaitConfirm, or a task frame
	gated      bool   // a task frame (gate.gated)
}

// heldQueue keeps held frames in the order they were held. That is LSN
// order, except for task frames (gate.gated). Frames live in one arena,
// so holding a frame costs a copy, not an allocation.
type heldQueue struct {
	items []heldFrame
	head  int
	arena []byte
}

func (q *heldQueue) len() int { return len(q.items) - q.head }

// push holds frame (nil for a close) as h, whose place in the arena it
// sets.
func (q *heldQueue) push(h heldFrame, frame []byte) {
	h.start = len(q.arena)
	q.arena = append(q.arena, frame...)
	h.end = len(q.arena)
	q.items = append(q.items, h)
}

// ready returns the first held item if it is durable at lsn, else nil.
func (q *heldQueue) ready(lsn uint64) *heldFrame {
	if q.head < len(q.items) && q.items[q.head].lsn <= lsn {
		return &q.items[q.head]
	}
	return nil
}

// pop hands the first held item to fn and drops it. compact runs later.
func (q *heldQueue) pop(fn func(h *heldFrame, frame []byte)) {
	h := &q.items[q.head]
	fn(h, q.arena[h.start:h.end])
	q.items[q.head] = heldFrame{}
	q.head++
}

// extract hands fn, in order, every held item that keep refuses. It keeps
// the others in order. The arena is compacted in place. Kept frames only
// move towards the front, after fn has seen what they overwrite.
func (q *heldQueue) extract(keep func(h *heldFrame, frame []byte) bool, fn func(h *heldFrame, frame []byte)) {
	k, pos := 0, 0
	for i := q.head; i < len(q.items); i++ {
		h := q.items[i]
		frame := q.arena[h.start:h.end]
		if !keep(&h, frame) {
			fn(&h, frame)
			continue
		}
		n := copy(q.arena[pos:], frame)
		h.start, h.end = pos, pos+n
		pos += n
		q.items[k] = h
		k++
	}
	clear(q.items[k:])
	q.items, q.head, q.arena = q.items[:k], 0, q.arena[:pos]
}

// compact drops released frames once they are half the queue. So the
// arena stays proportional to what is still held.
func (q *heldQueue) compact() {
	if q.head == len(q.items) {
		q.items, q.head, q.arena = q.items[:0], 0, q.arena[:0]
		return
	}
	if q.head < 1024 || q.head < len(q.items)/2 {
		return
	}
	base := q.items[q.head].start
	n := copy(q.arena, q.arena[base:])
	q.arena = q.arena[:n]
	m := copy(q.items, q.items[q.head:])
	clear(q.items[m:])
	q.items = q.items[:m]
	for i := range q.items {
		q.items[i].start -= base
		q.items[i].end -= base
	}
	q.head = 0
}
