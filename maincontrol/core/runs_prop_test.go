package core

import (
	"strconv"

	"github.com/stretchr/testify/require"
)

// doRun sends a random run request: a small run with dependencies,
// references and compensations, or a resume, cancel or query of one.
func (p *prop) doRun() {
	cl := p.clients[p.pick(len(p.clients))]
	c := p.h.c
	switch p.pick(10) {
	case 0, 1:
		if c.runs.nextID > 1 {
			id := strconv.FormatUint(1+p.rnd.Uint64N(c.runs.nextID), 10)
			kv := []string{"req", "x", "run_id", id}
			if p.chance(30) {
				kv = append(kv, "from", "s"+strconv.Itoa(p.pick(4)))
			}
			before := len(p.h.fx.frames[cl])
			p.h.send(cl, "run_resume", kv...)
			for _, m := range p.h.fx.frames[cl][before:] {
				if m.Type() != "run_resumed" {
					continue
				}
				// Its steps were requeued: they may end again.
				rid, err := m.Uint("run_id")
				require.NoError(p.t, err)
				r := c.runs.byID[rid]
				for i := range r.steps {
					if id := r.first + uint64(i); id < uint64(len(p.seen)) {
						p.seen[id].terminal = 0
					}
				}
				p.stats["run_resumed"]++
			}
		}
		return
	case 2:
		if c.runs.nextID > 1 {
			p.h.send(cl, "run_cancel", "req", "x", "run_id", strconv.FormatUint(1+p.rnd.Uint64N(c.runs.nextID), 10))
		}
		return
	case 3:
		p.h.send(cl, "run_list", "req", "x", "limit", "5")
		return
	}
	n := 1 + p.pick(4)
	kv := []string{"req", "r", "name", "prop", "steps", strconv.Itoa(n)}
	if p.chance(40) {
		kv = append(kv, "key", "run"+p.keys[p.pick(len(p.keys))])
	}
	types := []string{"a", "b", "c"}
	for i := range n {
		pre := "step." + strconv.Itoa(i) + "."
		kv = append(kv, pre+"id", "s"+strconv.Itoa(i), pre+"type", types[p.pick(3)],
			pre+"max_attempts", strconv.Itoa(1+p.pick(2)))
		if i > 0 && p.chance(70) {
			d := p.pick(i)
			kv = append(kv, pre+"depends_on", "s"+strconv.Itoa(d))
			if p.chance(50) {
				kv = append(kv, pre+"arg.in", "${steps.s"+strconv.Itoa(d)+".out."+[]string{"v", "o"}[p.pick(2)]+"}")
			}
			if p.chance(15) {
				kv = append(kv, pre+"when", "failed")
			}
		}
		if p.chance(15) {
			kv = append(kv, pre+"optional", "true")
		}
		if p.chance(40) {
			kv = append(kv, pre+"compensate.arg.x", "${steps.s"+strconv.Itoa(i)+".out.v}")
		}
	}
	p.h.send(cl, "run_submit", kv...)
	p.stats["run_submit"]++
}
