package core

import (
	"container/heap"
	"slices"
	"strconv"

	"github.com/apollo11/apollo11/wire"
)

// typeRow is what type_list shows of one task type. tt is nil for a type
// known only by its pause.
type typeRow struct {
	name             string
	tt               *taskType
	executors, slots int
}

// typeColumn is one field of a type_list row, type.<i>.<name>. New
// columns go in typeColumns, and every reader ignores those it does not
// know (protocol section 8.7).
type typeColumn struct {
	name  string
	value func(c *Core, r *typeRow) string
}

var typeColumns = []typeColumn{
	{"pending", func(c *Core, r *typeRow) string { return strconv.Itoa(r.count(Pending)) }},
	{"running", func(c *Core, r *typeRow) string { return strconv.Itoa(r.count(Dispatched) + r.count(Running)) }},
	{"paused", func(c *Core, r *typeRow) string { _, ok := c.paused[r.name]; return strconv.FormatBool(ok) }},
	{"executors", func(c *Core, r *typeRow) string { return strconv.Itoa(r.executors) }},
	{"slots", func(c *Core, r *typeRow) string { return strconv.Itoa(r.slots) }},
}

func (r *typeRow) count(s State) int {
	if r.tt == nil {
		return 0
	}
	return int(r.tt.counts[s])
}

// maxTypeListLimit bounds a type_list page. With a column or ten per
// type, a page stays well under the 1,024 keys of a payload.
const maxTypeListLimit = 100

// typeList answers type_list (protocol section 8.7). It lists the known task
// types in byte order of their names, after `after`, a page at a time.
func (c *Core) typeList(p *peer, m *wire.Message, req string) {
	after, paged := m.Get("after")
	limit, err := m.UintOr("limit", maxTypeListLimit)
	if err != nil {
		c.badRequest(p, req, err)
		return
	}
	if limit < 1 || limit > maxTypeListLimit {
		c.badRequest(p, req, &wire.ValueError{Key: "limit", Reason: "must be 1 to " + strconv.Itoa(maxTypeListLimit)})
		return
	}
	base := len("type=type_page\nreq=") + wire.EscapedLen(req) + len("\ncount=") + 20 +
		len("\nmore=false") + len("\nskipped=") + 20
	// One pass keeps the limit smallest names after `after`, in a heap of at
	// most 100. It sorts no full list of types. A request costs O(types), with
	// MaxTaskTypes + maxPausedTypes bounding types. Names too large alone are
	// set aside in the pass. So a page never ends on them and paging goes on.
	var pick nameHeap
	var tooLarge []string
	eligible := 0
	consider := func(name string) {
		if paged && name <= after {
			return
		}
		if base+maxTypeRowLen(name) > c.cfg.MaxFrame {
			tooLarge = append(tooLarge, name)
			return
		}
		eligible++
		pick.offer(name, int(limit))
	}
	for name := range c.types {
		consider(name)
	}
	for name := range c.paused {
		if c.types[name] == nil {
			consider(name)
		}
	}
	cand := pick.sorted()
	more := eligible > len(cand)
	rows := make([]typeRow, len(cand))
	index := make(map[string]int, len(cand))
	for i, name := range cand {
		rows[i] = typeRow{name: name, tt: c.types[name]}
		index[name] = i
	}
	for _, e := range c.execs {
		if !e.connected() {
			continue
		}
		for _, tt := range e.types {
			if i, ok := index[tt.name]; ok {
				rows[i].executors++
				rows[i].slots += e.slots
			}
		}
	}
	descs := c.descsFor(index)
	keys := 5 // type, req, count, more, skipped
	used := 0
	var lines [][2]string
	n := 0
	for i := range rows {
		r := &rows[i]
		prefix := "type." + strconv.Itoa(n)
		row := [][2]string{{prefix, r.name}}
		size := 2 + len(prefix) + wire.EscapedLen(r.name)
		for _, col := range typeColumns {
			k, v := prefix+"."+col.name, col.value(c, r)
			row = append(row, [2]string{k, v})
			size += 2 + len(k) + wire.EscapedLen(v)
		}
		row, size = withDesc(row, size, prefix, descs[i], c.cfg.MaxFrame-base)
		if base+used+size > c.cfg.MaxFrame || keys+len(row) > wire.MaxKeys {
			more = true
			break
		}
		used += size
		keys += len(row)
		lines = append(lines, row...)
		n++
	}
	if n < len(rows) {
		more = true
	}
	// skipped counts the names too large alone that this page passed.
	// On the last page it counts all of them.
	skipped := 0
	for _, name := range tooLarge {
		if !more || (n > 0 && name < rows[n-1].name) {
			skipped++
		}
	}
	b := c.begin(wire.KindTypePage, req)
	b.UintK(kCount, uint64(n))
	b.Bool("more", more)
	if skipped > 0 {
		b.Uint("skipped", uint64(skipped))
	}
	for _, l := range lines {
		b.Str(l[0], l[1])
	}
	c.send(p.id, &b)
}

// withDesc adds a description's columns to a row that fits in room
// alone with them. A row that would not gets described=cut instead.
// So a long description never keeps a type from being listed.
func withDesc(row [][2]string, size int, prefix string, d *handlerDesc, room int) ([][2]string, int) {
	cols := descColumns(d)
	if len(cols) == 0 {
		return row, size
	}
	full, fullSize := row, size
	for _, kv := range cols {
		k := prefix + "." + kv[0]
		full = append(full, [2]string{k, kv[1]})
		fullSize += 2 + len(k) + wire.EscapedLen(kv[1])
	}
	if fullSize <= room {
		return full, fullSize
	}
	k := prefix + ".described"
	return append(row[:len(row):len(row)], [2]string{k, "cut"}), size + 2 + len(k) + len("cut")
}

// maxTypeRowLen bounds the bytes of a type_list row for name, with every
// number at 20 digits. A row over the frame at this bound is never listed.
func maxTypeRowLen(name string) int {
	const idx = len("type.") + 3 // at most 100 rows: index below 1,000
	size := 2 + idx + wire.EscapedLen(name)
	for _, col := range typeColumns {
		size += 2 + idx + 1 + len(col.name) + 20
	}
	return size + 2 + idx + len(".described") + len("cut") // a description cut (withDesc)
}

// nameHeap keeps the smallest names offered, up to a count, in a max-heap.
type nameHeap []string

func (h nameHeap) Len() int           { return len(h) }
func (h nameHeap) Less(i, j int) bool { return h[i] > h[j] }
func (h nameHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *nameHeap) Push(x any)        { *h = append(*h, x.(string)) }
func (h *nameHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// offer keeps name if it is among the n smallest seen.
func (h *nameHeap) offer(name string, n int) {
	if len(*h) < n {
		heap.Push(h, name)
	} else if name < (*h)[0] {
		(*h)[0] = name
		heap.Fix(h, 0)
	}
}

// sorted returns the kept names in byte order.
func (h nameHeap) sorted() []string {
	slices.Sort(h)
	return h
}
