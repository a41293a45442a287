package core

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func browseIDs(p BrowsePage) []uint64 {
	ids := make([]uint64, len(p.Tasks))
	for i, t := range p.Tasks {
		ids[i] = t.ID
	}
	return ids
}

// Browse pages newest first, by state and type, and its paging reaches
// every matching task once, across chunk boundaries.
func TestCore_Browse(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	const n = 2*chunkSize + 100
	for i := 1; i <= n; i++ {
		typ := "a"
		if i%3 == 0 {
			typ = "b"
		}
		h.submit(cl, "task_type", typ)
	}
	for _, id := range []string{"5", "1500", "2100"} {
		h.send(cl, "cancel", "req", "c", "task_id", id)
		h.expect(cl, "cancelled")
	}

	p := h.c.Browse(BrowseQuery{Limit: 3})
	assert.Equal(t, []uint64{n, n - 1, n - 2}, browseIDs(p))
	assert.Equal(t, uint64(n-2), p.Next)
	assert.False(t, p.Cut)

	p = h.c.Browse(BrowseQuery{State: Cancelled, Limit: 10})
	assert.Equal(t, []uint64{2100, 1500, 5}, browseIDs(p))
	assert.Zero(t, p.Next, "no next when nothing older matches")
	assert.Equal(t, Cancelled, p.Tasks[0].State)

	p = h.c.Browse(BrowseQuery{State: Cancelled, Before: 2100, Limit: 1})
	assert.Equal(t, []uint64{1500}, browseIDs(p))
	assert.Equal(t, uint64(1500), p.Next)

	// Every type-b pending task once, in descending order, 100 a page.
	var got []uint64
	before := uint64(0)
	for {
		p = h.c.Browse(BrowseQuery{State: Pending, Type: "b", Before: before, Limit: 100, MaxScan: 1 << 20})
		for _, s := range p.Tasks {
			require.Equal(t, "b", s.Type)
			require.Equal(t, Pending, s.State)
		}
		got = append(got, browseIDs(p)...)
		if p.Next == 0 {
			break
		}
		before = p.Next
	}
	var want []uint64
	for i := uint64(n); i >= 1; i-- {
		if i%3 == 0 && i != 1500 && i != 2100 {
			want = append(want, i)
		}
	}
	assert.Equal(t, want, got)

	// MaxScan cuts a sparse filter short, and Next goes on from there.
	p = h.c.Browse(BrowseQuery{Type: "b", Limit: 100, MaxScan: 10})
	assert.True(t, p.Cut)
	assert.Equal(t, 10, p.Scanned)
	assert.Equal(t, []uint64{n, n - 3, n - 6, n - 9}, browseIDs(p), "n is a multiple of 3")
	assert.Equal(t, uint64(n-9), p.Next)

	// Unknown type, Before below every id, Before past every id.
	assert.Empty(t, h.c.Browse(BrowseQuery{Type: "zzz", Limit: 5}).Tasks)
	assert.Empty(t, h.c.Browse(BrowseQuery{Before: 1, Limit: 5}).Tasks)
	assert.Equal(t, []uint64{n}, browseIDs(h.c.Browse(BrowseQuery{Before: 1 << 40, Limit: 1})))
	// Limits are clamped, never unbounded.
	assert.Len(t, h.c.Browse(BrowseQuery{Limit: 1 << 30, MaxScan: 1 << 30}).Tasks, MaxBrowseLimit)
}

// A listing row carries the first line of the error, clipped on a rune.
func TestCore_BrowseClipsError(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	ex := h.executor("e1", "x", 1)
	id := h.submit(cl, "task_type", "x", "max_attempts", "1")
	_, ver := h.task(ex)
	h.start(ex, id, ver)
	long := strings.Repeat("é", 100) + "\nsecond line"
	h.accepted(ex, id, ver, "failed", "error", long)
	p := h.c.Browse(BrowseQuery{Limit: 1})
	require.Len(t, p.Tasks, 1)
	e := p.Tasks[0].Error
	assert.True(t, strings.HasSuffix(e, "..."), e)
	assert.LessOrEqual(t, len(e), summaryErrorLen+3)
	assert.NotContains(t, e, "second")
	assert.True(t, strings.HasPrefix(long, strings.TrimSuffix(e, "...")))
}
