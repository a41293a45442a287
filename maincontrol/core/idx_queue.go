package core

// qent is a queue entry, a task id and the version it had when it was
// queued. An entry is valid while the task is still pending at that
// version, and not delayed. Cancelled or re-queued tasks leave stale
// entries behind. They are skipped when popped and compacted when they
// pile up.
type qent struct {
	id  uint64
	ver uint64
}

// fifo is a ring-buffer queue of entries. Its buffer's length is a power
// of two, so positions wrap with a mask rather than a division.
type fifo struct {
	buf   []qent
	head  int
	n     int
	stale int // entries known to be invalid, for compaction
}

// maxIdleQueue is the largest buffer a queue keeps when it drains, in
// entries of 16 bytes (256 KiB). Under load a queue drains and refills
// many times a second. Dropping a buffer of a few thousand entries each
// time made it grow again from 16, allocating twice its size per cycle.
const maxIdleQueue = 1 << 14

// minQueue is the smallest buffer, in entries. It is small, because many
// task types only ever hold a task or two. A queue that grows keeps its
// buffer when it drains, so starting small costs a few copies once.
const minQueue = 4

func (q *fifo) len() int { return q.n }

func (q *fifo) push(e qent) {
	if q.n == len(q.buf) {
		q.grow()
	}
	q.buf[q.at(q.n)] = e
	q.n++
}

// at returns the buffer index of the i-th entry.
func (q *fifo) at(i int) int { return (q.head + i) & (len(q.buf) - 1) }

func (q *fifo) grow() { q.resize(max(minQueue, 2*len(q.buf))) } // minQueue << k

// resize moves the entries to a buffer of size entries, a power of two.
func (q *fifo) resize(size int) {
	nb := make([]qent, size)
	for i := 0; i < q.n; i++ {
		nb[i] = q.buf[q.at(i)]
	}
	q.buf, q.head = nb, 0
}

// reserve makes room for n more entries with one copy at most.
func (q *fifo) reserve(n int) {
	want := max(minQueue, len(q.buf))
	for want < q.n+n {
		want *= 2
	}
	if want > len(q.buf) {
		q.resize(want)
	}
}

func (q *fifo) peek() qent { return q.buf[q.head] }

func (q *fifo) pop() qent {
	e := q.buf[q.head]
	q.buf[q.head] = qent{}
	q.head = q.at(1)
	q.n--
	if q.n == 0 {
		q.head, q.stale = 0, 0
		if len(q.buf) > maxIdleQueue {
			q.buf = nil // give back a queue that drained after a burst
		}
	}
	return e
}

// compact drops entries for which valid is false, once at least half the
// queue is known stale. So memory stays proportional to live entries.
func (q *fifo) compact(valid func(qent) bool) {
	if q.stale < 64 || q.stale < q.n/2 {
		return
	}
	w := 0
	for i := 0; i < q.n; i++ {
		e := q.buf[q.at(i)]
		if valid(e) {
			q.buf[q.at(w)] = e
			w++
		}
	}
	for i := w; i < q.n; i++ {
		q.buf[q.at(i)] = qent{}
	}
	q.n, q.stale = w, 0
}
