package core

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apollo11/apollo11/wire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCore_Dependencies(t *testing.T) {
	t.Run("bad", func(t *testing.T) {
		h := newHarness(t)
		cl := h.client()
		h.submit(cl, "task_type", "x")
		for _, deps := range []string{"2", "1,2", "1,,1", "x", "1, 1", ",", "0", "0,1"} {
			h.send(cl, "submit", "req", "d", "task_type", "x", "depends_on", deps)
			e := h.expectErr(cl, wire.CodeBadRequest)
			assert.Equal(t, "d", e.Value("req"))
			assert.Equal(t, 1, h.c.tasks.count, "%q", deps)
		}
	})
	t.Run("waits for all", func(t *testing.T) {
		h := newHarness(t)
		cl := h.client()
		a := h.submit(cl, "task_type", "x")
		b := h.submit(cl, "task_type", "x")
		c := h.submit(cl, "task_type", "x", "depends_on", fmt.Sprintf("%d,%d,%d", a, b, a), "wait", "true")
		assert.Equal(t, Waiting, h.state(c))
		assert.Equal(t, []uint64{a, b}, depsOf(h.get(c)), "duplicates count once")
		ex := h.executor("e1", "x", 1)
		h.finish(ex)
		assert.Equal(t, Waiting, h.state(c))
		h.checkReplay()
		h.finish(ex)
		id, _ := h.task(ex) // released and dispatched
		assert.Equal(t, c, id)
		// Dependency already succeeded: pending at once.
		d := h.submit(cl, "task_type", "y", "depends_on", itoa(a))
		assert.Equal(t, Pending, h.state(d))
		h.checkReplay()
	})
	t.Run("many, ending in any order", func(t *testing.T) {
		// Past shortDeps the list is deduplicated through a set and the
		// check resumes where it stopped: same answers as the short way.
		h := newHarness(t)
		cl := h.client()
		const n = 3 * shortDeps
		var list []string
		var want []uint64
		for range n {
			id := h.submit(cl, "task_type", "x")
			want = append(want, id)
			list = append(list, itoa(id), itoa(want[0])) // every other one a repeat
		}
		w := h.submit(cl, "task_type", "y", "depends_on", strings.Join(list, ","))
		assert.Equal(t, want, depsOf(h.get(w)), "duplicates count once, in the order given")
		ex := h.executor("e1", "x", 1)
		for i := range n {
			id, v := h.task(ex) // dispatched in order: the first dependency ends first
			require.Equal(t, Waiting, h.state(w), "after %d of %d", i, n)
			h.start(ex, id, v)
			h.accepted(ex, id, v, "succeeded")
		}
		assert.Equal(t, Pending, h.state(w))
		assert.Empty(t, h.c.depsMet, "no bookkeeping left once released")
		h.checkReplay()

		// The last dependency in the list ends first: the resumed scan
		// must not skip it.
		h2 := newHarness(t)
		cl2 := h2.client()
		var ids []string
		for range n {
			ids = append(ids, itoa(h2.submit(cl2, "task_type", "x", "priority", "0")))
		}
		last := h2.submit(cl2, "task_type", "x", "priority", "9")
		ids = append(ids, itoa(last))
		w2 := h2.submit(cl2, "task_type", "y", "depends_on", strings.Join(ids, ","))
		ex2 := h2.executor("e1", "x", 1)
		for range n + 1 {
			require.Equal(t, Waiting, h2.state(w2))
			id, v := h2.task(ex2)
			h2.start(ex2, id, v)
			h2.accepted(ex2, id, v, "succeeded")
		}
		assert.Equal(t, Pending, h2.state(w2))
	})
	t.Run("chain", func(t *testing.T) {
		h := newHarness(t)
		cl := h.client()
		a := h.submit(cl, "task_type", "x", "max_attempts", "1")
		b := h.submit(cl, "task_type", "x", "depends_on", itoa(a), "wait", "true")
		c := h.submit(cl, "task_type", "x", "depends_on", itoa(b), "wait", "true")
		ex := h.executor("e1", "x", 1)
		_, v := h.task(ex)
		h.start(ex, a, v)
		h.accepted(ex, a, v, "failed")
		assert.Equal(t, Cancelled, h.state(b))
		assert.Equal(t, Cancelled, h.state(c))
		assert.Equal(t, fmt.Sprintf("dependency %d failed", a), h.get(b).errText())
		assert.Equal(t, fmt.Sprintf("dependency %d cancelled", b), h.get(c).errText())
		d := h.expect(cl, "done")
		assert.Equal(t, itoa(b), d.Value("task_id"))
		assert.Equal(t, fmt.Sprintf("dependency %d failed", a), d.Value("error"))
		d = h.expect(cl, "done")
		assert.Equal(t, itoa(c), d.Value("task_id"))
		h.none(ex)
		h.checkReplay()
	})
	t.Run("long chain", func(t *testing.T) {
		h := newHarness(t)
		cl := h.client()
		prev := h.submit(cl, "task_type", "x")
		first := prev
		for range 5000 {
			prev = h.submit(cl, "task_type", "x", "depends_on", itoa(prev))
		}
		h.send(cl, "cancel", "req", "c", "task_id", itoa(first))
		h.expect(cl, "cancelled")
		assert.Equal(t, 5001, h.c.counts[Cancelled])
		assert.Equal(t, fmt.Sprintf("dependency %d cancelled", prev-1), h.get(prev).errText())
	})
	t.Run("diamond", func(t *testing.T) {
		h := newHarness(t)
		cl := h.client()
		a := h.submit(cl, "task_type", "x")
		b := h.submit(cl, "task_type", "x", "depends_on", itoa(a))
		c := h.submit(cl, "task_type", "x", "depends_on", itoa(a))
		d := h.submit(cl, "task_type", "x", "depends_on", fmt.Sprintf("%d,%d", c, b))
		h.send(cl, "cancel", "req", "c", "task_id", itoa(a))
		h.expect(cl, "cancelled")
		for _, id := range []uint64{b, c, d} {
			assert.Equal(t, Cancelled, h.state(id))
		}
		// b ended first (it is a's first dependent), so d names b.
		assert.Equal(t, fmt.Sprintf("dependency %d cancelled", b), h.get(d).errText(),
			"names the first dependency that ended so")
		h.checkReplay()
	})
	t.Run("diamond succeeds", func(t *testing.T) {
		h := newHarness(t)
		cl := h.client()
		a := h.submit(cl, "task_type", "x")
		b := h.submit(cl, "task_type", "x", "depends_on", itoa(a))
		c := h.submit(cl, "task_type", "x", "depends_on", itoa(a))
		d := h.submit(cl, "task_type", "x", "depends_on", fmt.Sprintf("%d,%d", b, c))
		ex := h.executor("e1", "x", 1)
		var order []uint64
		for range 4 {
			order = append(order, h.finish(ex))
		}
		assert.Equal(t, []uint64{a, b, c, d}, order)
		h.checkReplay()
	})
	t.Run("already failed at submit", func(t *testing.T) {
		h := newHarness(t)
		cl := h.client()
		a := h.submit(cl, "task_type", "x")
		b := h.submit(cl, "task_type", "x")
		h.send(cl, "cancel", "req", "c", "task_id", itoa(b))
		h.expect(cl, "cancelled")
		h.send(cl, "submit", "req", "s", "task_type", "x", "depends_on", fmt.Sprintf("%d,%d", a, b), "wait", "true")
		assert.Equal(t, []string{"submitted", "done"}, h.types(cl))
		m := h.expect(cl, "submitted")
		id, _ := tokenOf(t, msgWithVersion(m))
		d := h.expect(cl, "done")
		assert.Equal(t, "cancelled", d.Value("state"))
		assert.Equal(t, fmt.Sprintf("dependency %d cancelled", b), d.Value("error"))
		assert.Equal(t, Cancelled, h.state(id))
		// Created, so the id is used and the task is known.
		assert.Equal(t, "cancelled", h.query(cl, id).Value("state"))
		h.checkReplay()
		// The first such id in depends_on order is named.
		c := h.submit(cl, "task_type", "x", "max_attempts", "1")
		ex := h.executor("e1", "x", 1)
		h.finish(ex) // a
		_, v := h.task(ex)
		h.start(ex, c, v)
		h.accepted(ex, c, v, "failed")
		e := h.submit(cl, "task_type", "x", "depends_on", fmt.Sprintf("%d,%d,%d", a, c, b))
		assert.Equal(t, fmt.Sprintf("dependency %d failed", c), h.get(e).errText())
		h.checkReplay()
	})
	t.Run("dependency dropped by retention", func(t *testing.T) {
		h := newHarness(t, func(c *Config) { c.Retention = time.Minute })
		cl := h.client()
		a := h.submit(cl, "task_type", "x")
		b := h.submit(cl, "task_type", "y")
		c := h.submit(cl, "task_type", "x", "depends_on", fmt.Sprintf("%d,%d", a, b))
		ex := h.executor("e1", "x", 1)
		h.finish(ex)
		h.advance(time.Minute)
		require.Nil(t, h.c.tasks.get(a))
		h.send(cl, "submit", "req", "s", "task_type", "x", "depends_on", itoa(a))
		h.expectErr(cl, wire.CodeBadRequest)
		ey := h.executor("ey", "y", 1)
		h.finish(ey) // b: c's last live dependency
		ex = h.executor("e2", "x", 1)
		id, _ := h.task(ex)
		assert.Equal(t, c, id)
		h.checkReplay()
	})
}
