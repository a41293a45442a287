package core

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/wire"
)

// A client's submit of a future fire key would make that firing find the
// key taken and skip its body: the sched: prefix is refused to clients.
func TestSchedule_ClientMayNotTakeAFireKey(t *testing.T) {
	h, p := newSchedHarness(t)
	h.addSched(p, "name", "ingest", "cron", "*/1 * * * *", "task_type", "fetch")
	h.send(p, "submit", "req", "s", "task_type", "noop", "key", fireKey("ingest", minute1))
	m := h.expectErr(p, wire.CodeBadRequest)
	assert.Contains(t, m.Value("message"), "keys starting with sched: are reserved for schedules")
	h.send(p, "run_submit", append([]string{"req", "r", "key", fireKey("ingest", minute1+60)}, chain...)...)
	m = h.expectErr(p, wire.CodeBadRequest)
	assert.Contains(t, m.Value("message"), "reserved for schedules")

	h.at(minute1, 0)
	id, ok := h.c.keys[fireKey("ingest", minute1)]
	require.True(t, ok, "the firing made its task")
	assert.Equal(t, "fetch", h.query(p, id).Value("task_type"), "the firing ran its own body")
	assert.Equal(t, uint64(1), h.c.scheds["ingest"].fires)
	// Other keys, even ones holding "sched:" later, stay the client's.
	h.submit(p, "task_type", "noop", "key", "x-sched:1")
	h.checkReplay()
}
