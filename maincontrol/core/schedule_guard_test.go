package core

import (
	"fmt"
	"slices"
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

// resume resumes name at unix second s, returns the reply's next_fire
// and ticks.
func (h *harness) resume(p PeerID, name string, s int64) string {
	h.t.Helper()
	h.at(s, 0)
	h.send(p, "schedule_resume", "req", "r", "name", name)
	next := h.expect(p, "schedule_resumed").Value("next_fire")
	h.c.Tick()
	return next
}

// schedule_resume after a long pause named the fire time from before it,
// long past; it names the one the missed policy gives.
func TestSchedule_ResumeRepliesTheNextFireItUses(t *testing.T) {
	h, p := newSchedHarness(t)
	for _, name := range []string{"skip", "catch", "soon"} {
		kv := []string{"name", name, "cron", "*/1 * * * *", "task_type", "t"}
		if name == "catch" {
			kv = append(kv, "missed", "catch_up")
		}
		h.addSched(p, kv...)
		h.send(p, "schedule_pause", "req", "p", "name", name)
		h.expect(p, "schedule_paused")
	}

	// 40 s after 22:34:00, past the 30 s grace: skip waits for 22:35:00.
	late := minute1 + 20*60 + 40
	assert.Equal(t, fmt.Sprint(minute1+21*60), h.resume(p, "skip", late))
	assert.Empty(t, schedTasks(h.c, "skip"))
	assert.Equal(t, minute1+21*60, h.c.scheds["skip"].next)
	// catch_up fires the latest missed time at once.
	assert.Equal(t, fmt.Sprint(minute1+20*60), h.resume(p, "catch", late+1))
	assert.Equal(t, map[string]int{fireKey("catch", minute1+20*60): 1}, schedTasks(h.c, "catch"))
	// 10 s after a fire time it is on time: that time fires.
	assert.Equal(t, fmt.Sprint(minute1+21*60), h.resume(p, "soon", minute1+21*60+10))
	assert.Equal(t, map[string]int{fireKey("soon", minute1+21*60): 1}, schedTasks(h.c, "soon"))
	h.checkReplay()
}

// A body takes every key of the task field tables but the refused ones,
// so a new table row needs no edit here.
func TestSchedule_BodyTakesEveryTableKey(t *testing.T) {
	var keys []string
	for i := range v1Fields {
		keys = append(keys, v1Fields[i].key.String())
	}
	for i := range taskFields {
		keys = append(keys, taskFields[i].key.String())
	}
	require.Contains(t, keys, "label")
	h, p := newSchedHarness(t)
	for i, k := range keys {
		if k == "task_type" || slices.Contains(schedNotBody, k) {
			continue
		}
		assert.True(t, bodyKey(k), k)
		h.send(p, "schedule_add", "req", "a", "name", fmt.Sprint("s", i), "cron", "@daily", "task_type", "t", k, "1")
		if m := h.fx.frames[p][len(h.fx.frames[p])-1]; m.Kind() == "error" {
			assert.NotContains(t, m.Value("message"), "not a submit key", k)
		}
		h.drain(p)
	}
	assert.False(t, bodyKey("bogus"))
	assert.False(t, bodyKey("wait"))
}
