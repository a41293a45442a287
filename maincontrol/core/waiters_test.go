package core

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestWaiterSet(t *testing.T) {
	taken := func(ws *waiterSet, id uint64) []waiter {
		var got []waiter
		ws.take(id, func(w waiter) { got = append(got, w) })
		return got
	}
	a, b, c := waiter{peer: 1, req: "a"}, waiter{peer: 2, req: "b"}, waiter{peer: 1, req: "c"}
	tests := []struct {
		name string
		add  []waiter
		drop bool
		want []waiter
	}{
		{name: "none"},
		{name: "one", add: []waiter{a}, want: []waiter{a}},
		{name: "several, in order", add: []waiter{a, b, c}, want: []waiter{a, b, c}},
		{name: "dropped", add: []waiter{a, b}, drop: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := newWaiterSet()
			ws.add(99, waiter{peer: 9, req: "other task"})
			for _, w := range tt.add {
				ws.add(7, w)
			}
			if tt.drop {
				ws.drop(7)
			}
			assert.Equal(t, tt.want, taken(&ws, 7))
			assert.Empty(t, taken(&ws, 7), "taken once")
			assert.Equal(t, []waiter{{peer: 9, req: "other task"}}, taken(&ws, 99), "other tasks untouched")
			assert.Empty(t, ws.first)
			assert.Empty(t, ws.more)
		})
	}
}
