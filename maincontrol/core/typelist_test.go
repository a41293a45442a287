package core

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/wire"
)

// typePage sends type_list and returns its rows as name -> field -> value
// in reply order, and more.
func (h *harness) typePage(p PeerID, kv ...string) ([]string, map[string]map[string]string, *wire.Message) {
	h.t.Helper()
	h.send(p, "type_list", append([]string{"req", "l"}, kv...)...)
	m := h.expect(p, "type_page")
	n, err := m.Uint("count")
	require.NoError(h.t, err)
	var names []string
	rows := map[string]map[string]string{}
	for i := range int(n) {
		pre := "type." + strconv.Itoa(i)
		name, ok := m.Get(pre)
		require.True(h.t, ok, "%s in %s", pre, m)
		names = append(names, name)
		rows[name] = map[string]string{}
		for _, col := range typeColumns {
			rows[name][col.name] = m.Value(pre + "." + col.name)
		}
	}
	return names, rows, m
}

func TestTypeList_CountsAndPaging(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	ex1 := h.executor("e1", "b", 3)
	h.executor("e2", "b,c", 2)
	for range 3 {
		h.submit(cl, "task_type", "b")
	}
	h.submit(cl, "task_type", "a,x\ny=z")
	h.submit(cl, "task_type", "a,x\ny=z", "delay_ms", "5000")
	h.pause(cl, "pause", "p")
	id, ver := h.task(ex1)
	h.start(ex1, id, ver)

	names, rows, m := h.typePage(cl)
	assert.Equal(t, []string{"a,x\ny=z", "b", "c", "p"}, names)
	assert.Equal(t, "false", m.Value("more"))
	assert.Equal(t, map[string]string{"pending": "2", "running": "0", "paused": "false", "executors": "0", "slots": "0"}, rows["a,x\ny=z"])
	// Three b tasks: one running on e1, two dispatched (e1 has 3 slots).
	assert.Equal(t, map[string]string{"pending": "0", "running": "3", "paused": "false", "executors": "2", "slots": "5"}, rows["b"])
	assert.Equal(t, map[string]string{"pending": "0", "running": "0", "paused": "false", "executors": "1", "slots": "2"}, rows["c"])
	assert.Equal(t, map[string]string{"pending": "0", "running": "0", "paused": "true", "executors": "0", "slots": "0"}, rows["p"])

	// Pages of two, after the last name of each.
	names, _, m = h.typePage(cl, "limit", "2")
	assert.Equal(t, []string{"a,x\ny=z", "b"}, names)
	assert.Equal(t, "true", m.Value("more"))
	names, _, m = h.typePage(cl, "limit", "2", "after", "b")
	assert.Equal(t, []string{"c", "p"}, names)
	assert.Equal(t, "false", m.Value("more"))
	names, _, _ = h.typePage(cl, "after", "bb")
	assert.Equal(t, []string{"c", "p"}, names, "after need not be a known name")

	for _, limit := range []string{"0", "101", "x"} {
		h.send(cl, "type_list", "req", "b", "limit", limit)
		h.expectErr(cl, wire.CodeBadRequest)
	}
}

func TestTypeList_BoundedByFrameAndKeys(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxFrame = MinMaxFrame })
	cl := h.client()
	var want []string
	for i := range 30 {
		name := strings.Repeat("t", 40) + strconv.Itoa(100+i)
		want = append(want, name)
		h.pause(cl, "pause", name)
	}
	// A name too long for any reply's row (an executor may register one
	// of nearly max_frame bytes) is passed over and counted.
	h.executor("e1", strings.Repeat("z", MinMaxFrame-100), 1)
	var got []string
	after := []string{}
	skipped := 0
	for range 40 {
		names, _, m := h.typePage(cl, after...)
		require.LessOrEqual(t, len(m.Fields), wire.MaxKeys)
		got = append(got, names...)
		if s, ok := m.Get("skipped"); ok {
			n, _ := strconv.Atoi(s)
			skipped += n
		}
		if m.Value("more") != "true" {
			break
		}
		require.NotEmpty(t, names)
		after = []string{"after", names[len(names)-1]}
	}
	assert.Equal(t, want, got)
	assert.Equal(t, 1, skipped)
}

// A page whose every candidate is too large alone goes on past them:
// it must not end with count=0 more=true and no name to page after.
func TestTypeList_PagesPastTooLargeNames(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxFrame = MinMaxFrame })
	cl := h.client()
	h.pause(cl, "pause", "a")
	h.executor("e1", "b"+strings.Repeat("z", MinMaxFrame-100), 1)
	h.executor("e2", "c"+strings.Repeat("z", MinMaxFrame-100), 1)
	h.pause(cl, "pause", "d")
	var got []string
	after := []string{"limit", "1"}
	skipped := 0
	for range 10 {
		names, _, m := h.typePage(cl, after...)
		got = append(got, names...)
		if s, ok := m.Get("skipped"); ok {
			n, _ := strconv.Atoi(s)
			skipped += n
		}
		if m.Value("more") != "true" {
			break
		}
		require.NotEmpty(t, names, "more=true with no name to page after")
		after = []string{"limit", "1", "after", names[len(names)-1]}
	}
	assert.Equal(t, []string{"a", "d"}, got)
	assert.Equal(t, 2, skipped)
}
