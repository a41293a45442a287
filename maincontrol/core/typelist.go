package core

import (
	"maps"
	"slices"
	"strconv"

	"github.com/apollo11/apollo11/wire"
)

// typeRow is what type_list shows of one task type; tt is nil for a type
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

// maxTypeListLimit bounds a type_list page: with a column or ten per
// type, a page stays well under the 1,024 keys of a payload.
const maxTypeListLimit = 100

// typeList answers type_list (protocol section 8.7): the known task types
// in byte order of their names, after `after`, a page at a time.
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
	names := slices.Collect(maps.Keys(c.types))
	for name := range c.paused {
		if c.types[name] == nil {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	start := 0
	if paged {
		start, _ = slices.BinarySearch(names, after)
		if start < len(names) && names[start] == after {
			start++
		}
	}
	// Rows for a page's worth of candidates; those that do not fit wait
	// for the next page.
	cand := names[start:min(len(names), start+int(limit))]
	more := start+len(cand) < len(names)
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
	base := len("type=type_page\nreq=") + wire.EscapedLen(req) + len("\ncount=") + 20 +
		len("\nmore=false") + len("\nskipped=") + 20
	keys := 5 // type, req, count, more, skipped
	used, skipped := 0, 0
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
		if base+size > c.cfg.MaxFrame {
			skipped++ // too large alone: listing it would block every later page
			continue
		}
		if base+used+size > c.cfg.MaxFrame || keys+len(row) > wire.MaxKeys {
			more = true
			break
		}
		used += size
		keys += len(row)
		lines = append(lines, row...)
		n++
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
