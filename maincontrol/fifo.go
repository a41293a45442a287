package maincontrol

// fifoLinks places an element in a fifo: its neighbours, and whether it
// is in one. Each element carries its own, so a fifo allocates nothing.
type fifoLinks[P any] struct {
	prev, next P
	in         bool
}

// linked is an element type of a fifo: a pointer to its own links.
type linked[P any] interface {
	comparable
	links() *fifoLinks[P]
}

// fifo lists elements oldest first. Adding, removing and taking the
// oldest cost the same however many there are.
type fifo[P linked[P]] struct {
	head, tail P
	n          int
}

func (q *fifo[P]) push(e P) {
	var none P
	l := e.links()
	l.prev, l.next, l.in = q.tail, none, true
	if q.tail != none {
		q.tail.links().next = e
	} else {
		q.head = e
	}
	q.tail = e
	q.n++
}

// remove takes e out, if it is in the fifo.
func (q *fifo[P]) remove(e P) {
	var none P
	l := e.links()
	if !l.in {
		return
	}
	if l.prev != none {
		l.prev.links().next = l.next
	} else {
		q.head = l.next
	}
	if l.next != none {
		l.next.links().prev = l.prev
	} else {
		q.tail = l.prev
	}
	l.prev, l.next, l.in = none, none, false
	q.n--
}
