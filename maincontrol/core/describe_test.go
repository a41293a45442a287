package core

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/wire"
)

// descCols reads a type_list row's description columns.
func (h *harness) descCols(cl PeerID, typ string) map[string]string {
	h.t.Helper()
	_, _, m := h.typePage(cl)
	n, err := m.Uint("count")
	require.NoError(h.t, err)
	for i := range int(n) {
		pre := "type." + itoa(i)
		if m.Value(pre) != typ {
			continue
		}
		out := map[string]string{}
		for _, col := range []string{"handler", "version", "args", "timeout_ms", "described"} {
			if v, ok := m.Get(pre + "." + col); ok {
				out[col] = v
			}
		}
		return out
	}
	h.t.Fatalf("type %s not listed in %s", typ, m)
	return nil
}

// The descriptions of register reach type_list, and those of the latest
// connected executor win; types replaces and drops them; they go with
// the executor, and a restart does not bring them back.
func TestDescribe_RegisterTypesAndTypeList(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	h.submit(cl, "task_type", "resize") // keeps the type known to the end
	e1 := h.open()
	h.send(e1, "register", "executor_id", "e1", "task_types", "resize,noop", "slots", "1",
		"describe.0.type", "resize", "describe.0.name", "resizer", "describe.0.version", "1.2",
		"describe.0.args", "path:string:required,width:int", "describe.0.timeout_ms", "30000")
	h.expect(e1, "registered")
	assert.Equal(t, map[string]string{"handler": "resizer", "version": "1.2",
		"args": "path:string:required,width:int", "timeout_ms": "30000"}, h.descCols(cl, "resize"))
	assert.Empty(t, h.descCols(cl, "noop"), "a type nobody describes has no columns")

	e2 := h.open()
	h.send(e2, "register", "executor_id", "e2", "task_types", "resize", "slots", "1",
		"describe.3.type", "resize", "describe.3.version", "2.0")
	h.expect(e2, "registered")
	assert.Equal(t, map[string]string{"version": "2.0"}, h.descCols(cl, "resize"), "the latest registration wins")

	// e2 redescribes resize with types (an add of a type it takes), then drops it.
	h.send(e2, "types", "req", "t", "add", "resize", "describe.0.type", "resize", "describe.0.version", "2.1")
	h.expect(e2, "types_ok")
	assert.Equal(t, "2.1", h.descCols(cl, "resize")["version"])
	h.send(e2, "types", "req", "t", "drop", "resize")
	h.expect(e2, "types_ok")
	assert.Equal(t, "1.2", h.descCols(cl, "resize")["version"], "e2 forgot its description with the type")

	// A disconnected e1 still describes; forgotten at its timeout, it does not.
	before := h.c.descBytes
	require.Positive(t, before)
	h.c.Closed(e1)
	assert.Equal(t, "1.2", h.descCols(cl, "resize")["version"], "kept while the executor is kept")
	h.advance(h.c.cfg.HeartbeatTimeout + h.c.cfg.HeartbeatTimeout/2)
	require.Nil(t, h.c.execs["e1"])
	assert.Empty(t, h.descCols(cl, "resize"))
	assert.Zero(t, h.c.descBytes, "forgotten with the executor")

	h.checkReplay()
	h.restart()
	assert.Zero(t, h.c.descBytes, "descriptions are not durable")
}

// A register or types whose descriptions break the rules is bad_request
// and changes nothing.
func TestDescribe_BadDescriptions(t *testing.T) {
	h := newHarness(t)
	big := strings.Repeat("a:string,", 500)
	for _, kv := range [][]string{
		{"describe.0.type", "zz"},                        // not registered
		{"describe.0.type", "a", "describe.1.type", "a"}, // twice
		{"describe.0.version", "1"},                      // no type
		{"describe.0.type", "a", "describe.0.args", "x:number"},
		{"describe.0.type", "a", "describe.0.args", "X:int"},
		{"describe.0.type", "a", "describe.0.timeout_ms", "0"},
		{"describe.0.type", "a", "describe.0.version", strings.Repeat("v", 65)},
		{"describe.0.type", "a", "describe.0.args", big[:len(big)-1]},
		{"describe.01.type", "a"},
		{"describe.1024.type", "a"},
	} {
		p := h.open()
		h.send(p, "register", append([]string{"executor_id", "bad", "task_types", "a", "slots", "1"}, kv...)...)
		h.expectErr(p, wire.CodeBadRequest)
		assert.Nil(t, h.c.execs["bad"], "%v", kv)
	}
	ex := h.executor("ok", "a", 1)
	h.send(ex, "types", "req", "t", "add", "b", "describe.0.type", "a", "describe.0.version", "1")
	assert.Contains(t, h.expectErr(ex, wire.CodeBadRequest).Value("message"), "not one this frame registers or adds")
	assert.Equal(t, []string{"a"}, h.c.Executors()[0].Types)
	assert.Zero(t, h.c.descBytes)
}

// One executor keeps at most 64 KiB of descriptions and all executors at
// most 4 MiB; past them the register is accepted and the rest not kept.
func TestDescribe_Bounds(t *testing.T) {
	h := newHarness(t)
	var names []string
	for i := range 130 {
		names = append(names, "argument_name_number_"+itoa(i)+":string")
	}
	args := strings.Join(names, ",") // about 4,000 bytes
	register := func(id string) PeerID {
		p := h.open()
		kv := []string{"executor_id", id, "slots", "1"}
		var types []string
		for i := range 40 {
			typ := "t" + itoa(i)
			types = append(types, typ)
			kv = append(kv, "describe."+itoa(i)+".type", typ, "describe."+itoa(i)+".args", args)
		}
		kv = append(kv, "task_types", strings.Join(types, ","))
		h.send(p, "register", kv...)
		h.expect(p, "registered")
		return p
	}
	register("e0")
	e := h.c.execs["e0"]
	assert.LessOrEqual(t, e.descBytes, wire.MaxExecutorDescBytes)
	assert.Greater(t, e.descBytes, wire.MaxExecutorDescBytes-5000, "kept up to the bound")
	assert.Less(t, len(e.descs), 40, "the ones past it are not kept")

	for i := 1; h.c.descBytes+wire.MaxExecutorDescBytes <= maxDescBytes; i++ {
		register("e" + itoa(i))
	}
	last := register("last")
	assert.LessOrEqual(t, h.c.descBytes, maxDescBytes)
	assert.Less(t, h.c.execs["last"].descBytes, wire.MaxExecutorDescBytes, "the global bound cut this one")
	assert.LessOrEqual(t, h.c.regBytes+h.c.descBytes, maxRegBytes, "they count in the registrations' bytes")

	// Re-registering replaces its own descriptions: none now.
	h.c.Closed(last)
	p := h.open()
	h.send(p, "register", "executor_id", "last", "task_types", "t0", "slots", "1")
	h.expect(p, "registered")
	assert.Zero(t, h.c.execs["last"].descBytes)
	sum := 0
	for _, e := range h.c.execs {
		sum += e.descBytes
	}
	assert.Equal(t, sum, h.c.descBytes)
}

// checkDescs: the descriptions' bytes add up, within their bounds.
func checkDescs(c *Core) error {
	all := 0
	for _, e := range c.execs {
		n := 0
		for typ, d := range e.descs {
			n += d.cost(typ)
		}
		if n != e.descBytes || n > wire.MaxExecutorDescBytes {
			return fmt.Errorf("executor %s: descriptions of %d bytes, counted %d", e.id, n, e.descBytes)
		}
		all += n
	}
	if all != c.descBytes || all > maxDescBytes {
		return fmt.Errorf("descriptions of %d bytes, counted %d", all, c.descBytes)
	}
	return nil
}
