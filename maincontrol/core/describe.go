package core

import (
	"log/slog"
	"strconv"
	"strings"

	"github.com/apollo11/apollo11/wire"
)

// Bounds of the handler descriptions kept (protocol section 8.11). They
// live in memory only, since executors send them again when they register.
const (
	// maxDescBytes caps the descriptions of all executors, counted as
	// handlerDesc.cost. Past it an executor's descriptions are not kept.
	// They count in maxRegBytes too, and this leaves registrations half.
	maxDescBytes = 4 << 20
	// descOverhead is what a description costs besides its values. That is
	// its struct, its map slot and its strings' headers.
	descOverhead = 128
)

// handlerDesc is what the core keeps of one description. The schema stays
// in its wire form, a few bytes per arg rather than a struct each.
type handlerDesc struct {
	handler, version, args string
	timeoutMs              uint64
}

func (d *handlerDesc) cost(typ string) int {
	return len(typ) + len(d.handler) + len(d.version) + len(d.args) + 20 + descOverhead
}

// parseDescs reads a register's or types' descriptions and checks that
// each names a type of want, once. A fault answers bad_request.
func (c *Core) parseDescs(p *peer, req string, m *wire.Message, want []string) ([]wire.Description, bool) {
	descs, err := wire.ParseDescriptions(m)
	if err != nil {
		c.badRequest(p, req, err)
		return nil, false
	}
	if len(descs) == 0 {
		return nil, true
	}
	wanted := make(map[string]bool, len(want))
	for _, t := range want {
		wanted[t] = false
	}
	for _, d := range descs {
		seen, ok := wanted[d.Type]
		switch {
		case !ok:
			c.badRequest(p, req, &wire.ValueError{Key: "describe", Reason: "type " + quoted(d.Type) +
				" is not one this frame registers or adds"})
			return nil, false
		case seen:
			c.badRequest(p, req, &wire.ValueError{Key: "describe", Reason: "type " + quoted(d.Type) + " described twice"})
			return nil, false
		}
		wanted[d.Type] = true
	}
	return descs, true
}

// keepDescs stores descs for e, within one executor's and all executors'
// bounds. First it forgets e's descriptions of the types in forget, or
// all of them when all is set. The strings are copied, because descs
// borrow from the read buffer.
func (c *Core) keepDescs(e *executor, descs []wire.Description, all bool, forget []string) {
	if all {
		c.dropDescs(e)
	}
	for _, t := range forget {
		c.dropDesc(e, t)
	}
	for _, d := range descs {
		c.dropDesc(e, d.Type)
	}
	left := 0
	for _, d := range descs {
		hd := handlerDesc{handler: strings.Clone(d.Name), version: strings.Clone(d.Version),
			args: wire.FormatArgs(d.Args), timeoutMs: d.TimeoutMs}
		name := d.Type
		if tt := c.types[name]; tt != nil {
			name = tt.name
		} else {
			name = strings.Clone(name)
		}
		cost := hd.cost(name)
		if e.descBytes+cost > wire.MaxExecutorDescBytes || c.descBytes+cost > maxDescBytes ||
			c.regBytes+c.descBytes+cost > maxRegBytes {
			left++
			continue
		}
		if e.descs == nil {
			e.descs = make(map[string]*handlerDesc)
		}
		e.descs[name] = &hd
		e.descBytes += cost
		c.descBytes += cost
	}
	if left > 0 {
		c.logLimited(slog.LevelWarn, "handler descriptions not kept: past their bounds", "executor", e.id,
			"left_out", left, "executor_bytes", e.descBytes, "all_bytes", c.descBytes,
			"max_executor_bytes", wire.MaxExecutorDescBytes, "max_all_bytes", maxDescBytes)
	}
}

func (c *Core) dropDesc(e *executor, typ string) {
	if d := e.descs[typ]; d != nil {
		cost := d.cost(typ)
		e.descBytes -= cost
		c.descBytes -= cost
		delete(e.descs, typ)
	}
}

// dropDescs forgets all of e's descriptions.
func (c *Core) dropDescs(e *executor) {
	c.descBytes -= e.descBytes
	e.descs, e.descBytes = nil, 0
}

// descsFor picks, for each type of index, the description type_list
// shows. That is the last registered connected executor's, else a kept
// one's. It makes one pass over the executors' descriptions.
func (c *Core) descsFor(index map[string]int) map[int]*handlerDesc {
	if c.descBytes == 0 {
		return nil
	}
	type pick struct {
		d         *handlerDesc
		connected bool
		seq       uint64
	}
	best := make(map[int]pick)
	for _, e := range c.execs {
		for typ, d := range e.descs {
			i, ok := index[typ]
			if !ok {
				continue
			}
			b, had := best[i]
			if !had || (e.connected() && !b.connected) || (e.connected() == b.connected && e.regSeq > b.seq) {
				best[i] = pick{d, e.connected(), e.regSeq}
			}
		}
	}
	out := make(map[int]*handlerDesc, len(best))
	for i, b := range best {
		out[i] = b.d
	}
	return out
}

// descColumns are the type_list columns of a description, in order.
// Empty values are left out.
func descColumns(d *handlerDesc) [][2]string {
	if d == nil {
		return nil
	}
	var cols [][2]string
	for _, kv := range [][2]string{{"handler", d.handler}, {"version", d.version}, {"args", d.args}} {
		if kv[1] != "" {
			cols = append(cols, kv)
		}
	}
	if d.timeoutMs > 0 {
		cols = append(cols, [2]string{"timeout_ms", strconv.FormatUint(d.timeoutMs, 10)})
	}
	return cols
}
