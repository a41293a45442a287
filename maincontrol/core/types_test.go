package core

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/apollo11/apollo11/wire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// heapInUse returns the live heap after a full collection.
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// A task type costs memory while it is known: an executor may register
// 1,024 of its own, and each pending task may name its own. The h11
// exhaustion probe measured about 950 B per idle type and 1,082 B per
// pending task of its own type (171 B with a shared one), mostly ten
// priority queues per type kept whether or not it has tasks.
func TestCore_MemoryPerTaskType(t *testing.T) {
	const n = wire.MaxExecutorTypes // as many as one register may list
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("type%06d", i) // 10 bytes: the names barely count
	}
	for _, tc := range []struct {
		name  string
		bound float64                  // bytes per type; generous, the old code took over twice as much
		load  func(h *harness) float64 // bytes per type
	}{
		{name: "idle, registered by an executor", bound: 450, load: func(h *harness) float64 {
			m := msg("register", "executor_id", "e1", "task_types", strings.Join(names, ","), "slots", "1")
			h.c.Open(99)
			before := heapInUse()
			h.c.Handle(99, m)
			perType := float64(heapInUse()-before) / n
			runtime.KeepAlive(m)
			h.expect(99, "welcome")
			h.expect(99, "registered")
			return perType
		}},
		{name: "one pending task of each", bound: 850, load: func(h *harness) float64 {
			cl := h.client()
			ms := make([]*wire.Message, n)
			for i := range ms {
				ms[i] = msg("submit", "req", "s", "task_type", names[i])
			}
			h.fx.frames[cl] = nil
			before := heapInUse()
			for _, m := range ms {
				h.c.Handle(cl, m)
			}
			h.fx.frames[cl] = nil // the replies are the harness's, not the core's
			h.fx.records = nil
			perType := float64(heapInUse()-before) / n
			runtime.KeepAlive(ms)
			return perType
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, func(c *Config) { c.Unlogged = true })
			perType := tc.load(h)
			require.Len(t, h.c.types, n)
			t.Logf("%.0f bytes per type", perType)
			assert.Less(t, perType, tc.bound, "bytes per type")
		})
	}
}
