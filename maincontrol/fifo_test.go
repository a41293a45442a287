package maincontrol

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

type fifoItem struct {
	name  string
	place fifoLinks[*fifoItem]
}

func (f *fifoItem) links() *fifoLinks[*fifoItem] { return &f.place }

func (q *fifo[P]) order() []P {
	var out []P
	var none P
	for e := q.head; e != none; e = e.links().next {
		out = append(out, e)
	}
	return out
}

// Removing from the head, the middle and the tail keeps the rest in
// order; removing what is not in the fifo changes nothing.
func TestFifo_PushRemove(t *testing.T) {
	var q fifo[*fifoItem]
	a, b, c, d := &fifoItem{name: "a"}, &fifoItem{name: "b"}, &fifoItem{name: "c"}, &fifoItem{name: "d"}
	for _, e := range []*fifoItem{a, b, c, d} {
		q.push(e)
	}
	assert.Equal(t, []*fifoItem{a, b, c, d}, q.order())
	q.remove(b)
	assert.Equal(t, []*fifoItem{a, c, d}, q.order())
	q.remove(a)
	q.remove(d)
	assert.Equal(t, []*fifoItem{c}, q.order())
	assert.Same(t, c, q.head)
	assert.Same(t, c, q.tail)
	q.remove(a) // not in it
	assert.Equal(t, 1, q.n)
	q.remove(c)
	assert.Nil(t, q.head)
	assert.Nil(t, q.tail)
	assert.Equal(t, 0, q.n)
	assert.False(t, c.place.in)
	q.push(b)
	assert.Equal(t, []*fifoItem{b}, q.order())
}
