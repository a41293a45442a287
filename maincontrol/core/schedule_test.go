package core

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/wire"
)

// The harness clock starts at 22:13:20 UTC; minute fire times follow.
const (
	schedStart = int64(1_700_000_000) // unix s of the harness clock's start
	minute1    = int64(1_700_000_040) // 22:14:00, the first */1 fire time
)

// testZones loads zones without the disk: UTC and a fixed +02:00.
func testZones(c *Config) {
	c.Zone = func(name string) (*time.Location, error) {
		switch name {
		case "UTC":
			return time.UTC, nil
		case "Test/Plus2":
			return time.FixedZone("Plus2", 2*3600), nil
		}
		return nil, fmt.Errorf("unknown time zone %s", name)
	}
}

func newSchedHarness(t *testing.T, mods ...func(*Config)) (*harness, PeerID) {
	h := newHarness(t, append([]func(*Config){testZones}, mods...)...)
	return h, h.client()
}

// addSched sends schedule_add and returns its reply.
func (h *harness) addSched(p PeerID, kv ...string) *wire.Message {
	h.t.Helper()
	h.send(p, "schedule_add", append([]string{"req", "a"}, kv...)...)
	return h.expect(p, "schedule_added")
}

// at moves the clock to unix second s plus ms and ticks.
func (h *harness) at(s int64, ms int64) {
	h.clock.T = time.UnixMilli(s*1000 + ms)
	h.c.Tick()
}

// schedTasks maps each fire key some task holds to how many hold it.
func schedTasks(c *Core, name string) map[string]int {
	out := map[string]int{}
	c.tasks.scan(0, 0, func(t *task) bool {
		if k := t.key(); strings.HasPrefix(k, "sched:"+name+":") {
			out[k]++
			if t.ownTrace() != k {
				out["bad trace "+t.ownTrace()]++
			}
		}
		return true
	})
	return out
}

func fireKey(name string, at int64) string { return schedKey(name, at) }

func TestSchedule_FiresOncePerFireTime(t *testing.T) {
	h, p := newSchedHarness(t)
	m := h.addSched(p, "name", "ingest", "cron", "*/1 * * * *", "task_type", "fetch", "arg.src", "s3://x", "priority", "4")
	assert.Equal(t, fmt.Sprint(minute1), m.Value("next_fire"))
	h.at(minute1-1, 999)
	assert.Empty(t, schedTasks(h.c, "ingest"), "not before its fire time")
	h.at(minute1, 0)
	assert.Equal(t, map[string]int{fireKey("ingest", minute1): 1}, schedTasks(h.c, "ingest"))
	for i := 0; i < 5; i++ {
		h.c.Tick() // the same instant again: nothing more
	}
	h.at(minute1+30, 0)
	h.at(minute1+60, 5)
	assert.Equal(t, map[string]int{fireKey("ingest", minute1): 1, fireKey("ingest", minute1+60): 1}, schedTasks(h.c, "ingest"))
	id := h.c.keys[fireKey("ingest", minute1)]
	q := h.query(p, id)
	assert.Equal(t, "fetch", q.Value("task_type"))
	assert.Equal(t, fireKey("ingest", minute1), q.Value("trace_id"))
	tk := h.get(id)
	assert.Equal(t, uint8(4), tk.priority)
	assert.Contains(t, tk.args, "arg.src=s3://x")

	h.send(p, "schedule_list", "req", "l")
	l := h.expect(p, "schedules")
	assert.Equal(t, "1", l.Value("count"))
	assert.Equal(t, "ingest", l.Value("sched.0.name"))
	assert.Equal(t, "2", l.Value("sched.0.fires"))
	assert.Equal(t, fmt.Sprint(minute1+60), l.Value("sched.0.last_fire"))
	assert.Equal(t, fmt.Sprint(minute1+120), l.Value("sched.0.next_fire"))
	assert.Equal(t, "fetch", l.Value("sched.0.task_type"))
	assert.Equal(t, "skip", l.Value("sched.0.missed"))
	h.checkReplay()
}

// A crash after the submit's record and before the fire record fires the
// same time again after the restart: the key finds the task, nothing new.
func TestSchedule_CrashBetweenSubmitAndRecordMakesNoDuplicate(t *testing.T) {
	h, p := newSchedHarness(t)
	h.addSched(p, "name", "n", "cron", "*/1 * * * *", "task_type", "t")
	h.at(minute1, 0)
	last := h.fx.records[len(h.fx.records)-1]
	var r record
	require.NoError(t, decodeRecord(last, &r))
	require.Equal(t, recSchedOp, r.kind, "the firing's last record advances the schedule")
	require.Equal(t, schedFired, r.sc.op)
	h.fx.records = h.fx.records[:len(h.fx.records)-1] // lost in the crash
	h.restart()
	assert.Equal(t, schedStart, h.c.scheds["n"].last, "the restart has not seen the firing")
	h.at(minute1, 400)
	assert.Equal(t, map[string]int{fireKey("n", minute1): 1}, schedTasks(h.c, "n"))
	assert.Equal(t, minute1, h.c.scheds["n"].last)
	assert.Equal(t, uint64(1), h.c.scheds["n"].fires)
	h.at(minute1+60, 0)
	assert.Len(t, schedTasks(h.c, "n"), 2)
	h.checkReplay()
}

func TestSchedule_MissedSkipAndCatchUp(t *testing.T) {
	h, p := newSchedHarness(t)
	h.addSched(p, "name", "skip", "cron", "*/1 * * * *", "task_type", "t")
	h.addSched(p, "name", "catch", "cron", "*/1 * * * *", "task_type", "t", "missed", "catch_up")
	// Down for ten minutes: the tick comes 40 s after the latest fire
	// time, past the grace of a minute schedule (30 s).
	down := minute1 + 9*60
	h.at(down+100, 0)
	assert.Empty(t, schedTasks(h.c, "skip"), "skip passes over late fire times")
	assert.Equal(t, down+60, h.c.scheds["skip"].last)
	assert.Equal(t, down+120, h.c.scheds["skip"].next, "the next future fire time")
	assert.Equal(t, map[string]int{fireKey("catch", down+60): 1}, schedTasks(h.c, "catch"),
		"catch_up fires once, for the latest missed time")
	h.at(down+120, 0)
	assert.Equal(t, map[string]int{fireKey("skip", down+120): 1}, schedTasks(h.c, "skip"))
	assert.Len(t, schedTasks(h.c, "catch"), 2)
	h.checkReplay()
}

// A fire time less than the grace late still fires under skip: a restart
// does not lose the minute it spans.
func TestSchedule_ShortLatenessStillFires(t *testing.T) {
	h, p := newSchedHarness(t)
	h.addSched(p, "name", "s", "cron", "*/1 * * * *", "task_type", "t")
	h.at(minute1+3*60+25, 0) // four fire times due, the latest 25 s ago
	assert.Equal(t, map[string]int{fireKey("s", minute1+180): 1}, schedTasks(h.c, "s"),
		"only the latest fires; the ones before it are passed over")
}

func TestSchedule_JitterIsDeterministicAndBounded(t *testing.T) {
	h, p := newSchedHarness(t)
	h.addSched(p, "name", "j", "cron", "*/1 * * * *", "task_type", "t", "jitter_ms", "30000")
	seen := map[int64]bool{}
	for i := int64(0); i < 20; i++ {
		at := minute1 + 60*i
		d := jitter("j", at, 30000)
		require.GreaterOrEqual(t, d, int64(0))
		require.Less(t, d, int64(30000))
		seen[d] = true
		if d > 0 {
			h.at(at, d-1)
			require.NotContains(t, schedTasks(h.c, "j"), fireKey("j", at), "not before its delay")
		}
		h.at(at, d)
		require.Contains(t, schedTasks(h.c, "j"), fireKey("j", at))
		assert.Equal(t, at*1000+d, h.get(h.c.keys[fireKey("j", at)]).createdMs)
	}
	assert.Greater(t, len(seen), 10, "delays spread")
	assert.Equal(t, jitter("j", minute1, 30000), jitter("j", minute1, 30000))
	h.send(p, "schedule_add", "req", "a", "name", "wide", "cron", "*/1 * * * *", "task_type", "t", "jitter_ms", "60000")
	assert.Contains(t, h.expectErr(p, wire.CodeBadRequest).Value("message"), "shortest gap")
	h.send(p, "schedule_add", "req", "a", "name", "wide", "cron", "@daily", "task_type", "t", "jitter_ms", "3600001")
	assert.Contains(t, h.expectErr(p, wire.CodeBadRequest).Value("message"), "at most 3600000")
}

func TestSchedule_PauseResumeDelete(t *testing.T) {
	h, p := newSchedHarness(t)
	h.addSched(p, "name", "s", "cron", "*/1 * * * *", "task_type", "t")
	h.send(p, "schedule_pause", "req", "p", "name", "s")
	assert.Equal(t, "true", h.expect(p, "schedule_paused").Value("changed"))
	h.send(p, "schedule_pause", "req", "p", "name", "s")
	assert.Equal(t, "false", h.expect(p, "schedule_paused").Value("changed"))
	h.at(minute1+5*60+10, 0)
	assert.Empty(t, schedTasks(h.c, "s"), "no firing while paused")
	h.send(p, "schedule_list", "req", "l", "name", "s")
	l := h.expect(p, "schedules")
	assert.Equal(t, "true", l.Value("sched.0.paused"))
	assert.False(t, l.Has("sched.0.next_fire"))

	// Resumed 10 s after a fire time: it is on time and fires; the ones
	// of the pause are passed over.
	h.send(p, "schedule_resume", "req", "r", "name", "s")
	assert.Equal(t, "true", h.expect(p, "schedule_resumed").Value("changed"))
	h.c.Tick()
	assert.Equal(t, map[string]int{fireKey("s", minute1+300): 1}, schedTasks(h.c, "s"))
	h.send(p, "schedule_resume", "req", "r", "name", "s")
	assert.Equal(t, "false", h.expect(p, "schedule_resumed").Value("changed"))

	// Paused over many fire times and resumed late: skip fires nothing.
	h.send(p, "schedule_pause", "req", "p", "name", "s")
	h.expect(p, "schedule_paused")
	h.at(minute1+20*60+30, 0)
	h.send(p, "schedule_resume", "req", "r", "name", "s")
	h.expect(p, "schedule_resumed")
	h.at(minute1+20*60+31, 500) // 91.5 s after 22:33:00: late
	assert.Len(t, schedTasks(h.c, "s"), 1)
	assert.Equal(t, minute1+20*60, h.c.scheds["s"].last)

	h.send(p, "schedule_delete", "req", "d", "name", "s")
	assert.Equal(t, "s", h.expect(p, "schedule_deleted").Value("name"))
	h.at(minute1+40*60, 0)
	assert.Len(t, schedTasks(h.c, "s"), 1, "tasks it made stay; no more firings")
	for _, typ := range []string{"schedule_pause", "schedule_resume", "schedule_delete", "schedule_list"} {
		h.send(p, typ, "req", "x", "name", "s")
		assert.Contains(t, h.expectErr(p, wire.CodeBadRequest).Value("message"), `no schedule named "s"`, typ)
	}
	h.checkReplay()
}

func TestSchedule_AddRefusesBadValues(t *testing.T) {
	long := strings.Repeat("x", 129)
	for _, tc := range []struct {
		kv   []string
		want string
	}{
		{[]string{"cron", "* * * * *", "task_type", "t"}, "name: required key missing"},
		{[]string{"name", "a b", "cron", "* * * * *", "task_type", "t"}, "A-Z a-z 0-9"},
		{[]string{"name", long, "cron", "* * * * *", "task_type", "t"}, "1 to 128 bytes"},
		{[]string{"name", "s", "task_type", "t"}, "cron: required key missing"},
		{[]string{"name", "s", "cron", "* * *", "task_type", "t"}, "expected 5 to 6 fields"},
		{[]string{"name", "s", "cron", "61 * * * *", "task_type", "t"}, "above maximum"},
		{[]string{"name", "s", "cron", "@every 1m", "task_type", "t"}, "@every is not a calendar"},
		{[]string{"name", "s", "cron", "TZ=UTC * * * * *", "task_type", "t"}, "give the zone as tz"},
		{[]string{"name", "s", "cron", "CRON_TZ=Europe/Paris", "task_type", "t"}, "give the zone as tz"},
		{[]string{"name", "s", "cron", strings.Repeat("1,", 200) + "1 * * * *", "task_type", "t"}, "longer than 256 bytes"},
		{[]string{"name", "s", "cron", "0 0 30 2 *", "task_type", "t"}, "no fire time within five years"},
		{[]string{"name", "s", "cron", "* * * * *", "tz", "Mars/Base", "task_type", "t"}, "unknown time zone"},
		{[]string{"name", "s", "cron", "* * * * *", "tz", "Local", "task_type", "t"}, "name the zone"},
		{[]string{"name", "s", "cron", "* * * * *", "tz", "", "task_type", "t"}, "unknown time zone"},
		{[]string{"name", "s", "cron", "* * * * *", "missed", "later", "task_type", "t"}, "skip or catch_up"},
		{[]string{"name", "s", "cron", "* * * * *", "jitter_ms", "-1", "task_type", "t"}, "jitter_ms"},
		{[]string{"name", "s", "cron", "* * * * *"}, "task_type: required key missing"},
		{[]string{"name", "s", "cron", "* * * * *", "task_type", "t", "key", "k"}, "keyed by the schedule"},
		{[]string{"name", "s", "cron", "* * * * *", "task_type", "t", "depends_on", "1"}, "keyed by the schedule"},
		{[]string{"name", "s", "cron", "* * * * *", "task_type", "t", "wait", "true"}, "keyed by the schedule"},
		{[]string{"name", "s", "cron", "* * * * *", "task_type", "t", "trace_id", "x"}, "keyed by the schedule"},
		{[]string{"name", "s", "cron", "* * * * *", "task_type", "t", "colour", "red"}, "not a submit key"},
		{[]string{"name", "s", "cron", "* * * * *", "task_type", "t", "priority", "10"}, "0 to 9"},
		{[]string{"name", "s", "cron", "* * * * *", "task_type", "t", "label", strings.Repeat("l", 300)}, "label"},
		{[]string{"name", "s", "cron", "* * * * *", "run.name", "r"}, "run.steps"},
		{[]string{"name", "s", "cron", "* * * * *", "run.name", "r", "run.steps", "1", "run.step.0.id", "a",
			"run.step.0.type", "t", "arg.x", "1"}, "a task or a run"},
		{[]string{"name", "s", "cron", "* * * * *", "run.name", "r", "run.steps", "1", "run.step.0.id", "a",
			"run.step.0.type", "t", "run.key", "k"}, "keyed by the schedule"},
		{[]string{"name", "s", "cron", "* * * * *", "run.name", "r", "run.steps", "2", "run.step.0.id", "a",
			"run.step.0.type", "t"}, "run.step.1"},
	} {
		h, p := newSchedHarness(t)
		h.send(p, "schedule_add", append([]string{"req", "a"}, tc.kv...)...)
		e := h.expectErr(p, wire.CodeBadRequest)
		assert.Contains(t, e.Value("message"), tc.want, "%v", tc.kv)
		assert.Empty(t, h.c.scheds, "%v", tc.kv)
		assert.Empty(t, h.fx.records, "%v", tc.kv)
	}
}

func TestSchedule_Bounds(t *testing.T) {
	h, p := newSchedHarness(t, func(c *Config) { c.MaxSchedules = 2; c.MaxScheduleBytes = 250 })
	h.addSched(p, "name", "a", "cron", "@hourly", "task_type", "t")
	h.addSched(p, "name", "b", "cron", "@hourly", "task_type", "t")
	h.send(p, "schedule_add", "req", "a", "name", "c", "cron", "@hourly", "task_type", "t")
	assert.Contains(t, h.expectErr(p, wire.CodeBadRequest).Value("message"), "--max-schedules")
	h.send(p, "schedule_delete", "req", "d", "name", "b")
	h.expect(p, "schedule_deleted")
	h.send(p, "schedule_add", "req", "a", "name", "c", "cron", "@hourly", "task_type", "t", "arg.x", strings.Repeat("v", 200))
	assert.Contains(t, h.expectErr(p, wire.CodeBadRequest).Value("message"), "--max-schedule-bytes 250")
	h.addSched(p, "name", "c", "cron", "@hourly", "task_type", "t", "arg.x", strings.Repeat("v", 150))
	assert.Len(t, h.c.scheds, 2)
}

func TestSchedule_AddTwice(t *testing.T) {
	h, p := newSchedHarness(t)
	h.addSched(p, "name", "s", "cron", "@hourly", "task_type", "t", "arg.a", "1", "arg.b", "2")
	n := len(h.fx.records)
	m := h.addSched(p, "name", "s", "cron", "@hourly", "arg.b", "2", "task_type", "t", "arg.a", "1")
	assert.Equal(t, "true", m.Value("duplicate"), "the same definition, keys in another order")
	assert.Len(t, h.fx.records, n, "nothing written")
	h.send(p, "schedule_add", "req", "a", "name", "s", "cron", "@daily", "task_type", "t", "arg.a", "1", "arg.b", "2")
	assert.Contains(t, h.expectErr(p, wire.CodeIllegalTransition).Value("message"), "delete it first")
}

func TestSchedule_TimeZone(t *testing.T) {
	h, p := newSchedHarness(t)
	m := h.addSched(p, "name", "nine", "cron", "0 9 * * *", "tz", "Test/Plus2", "task_type", "t")
	// 09:00 at +02:00 is 07:00 UTC; the clock is at 22:13 UTC on Nov 14.
	want := time.Date(2023, 11, 15, 7, 0, 0, 0, time.UTC).Unix()
	assert.Equal(t, fmt.Sprint(want), m.Value("next_fire"))
	h.send(p, "schedule_list", "req", "l")
	assert.Equal(t, "Test/Plus2", h.expect(p, "schedules").Value("sched.0.tz"))
	sec := h.addSched(p, "name", "secs", "cron", "*/10 * * * * *", "task_type", "t")
	assert.Equal(t, fmt.Sprint(schedStart+10), sec.Value("next_fire"), "six fields: seconds first")
}

func TestSchedule_AdminProof(t *testing.T) {
	h, p := newSchedHarness(t, func(c *Config) { c.AdminToken = []byte("admin-secret") })
	for _, typ := range []string{"schedule_add", "schedule_pause", "schedule_resume", "schedule_delete"} {
		h.send(p, typ, "req", "x", "name", "s", "cron", "@hourly", "task_type", "t")
		h.expectErr(p, wire.CodeNotPermitted)
	}
	h.send(p, "schedule_list", "req", "l")
	assert.Equal(t, "0", h.expect(p, "schedules").Value("count"))
}

// A firing the caps refuse is tried again each second, and fires once
// there is room, within the grace.
func TestSchedule_RefusedFiringRetries(t *testing.T) {
	h, p := newSchedHarness(t, func(c *Config) { c.MaxPending = 1 })
	h.submit(p, "task_type", "t")
	h.addSched(p, "name", "s", "cron", "*/1 * * * *", "task_type", "t")
	h.at(minute1, 0)
	assert.Empty(t, schedTasks(h.c, "s"))
	at, ok := h.c.NextTickAt()
	require.True(t, ok)
	assert.Equal(t, minute1*1000+schedRetryMs, at, "tried again a second later")
	h.send(p, "cancel", "req", "c", "task_id", "1")
	h.expect(p, "cancelled")
	h.at(minute1, 999)
	assert.Empty(t, schedTasks(h.c, "s"), "not before its retry")
	h.at(minute1+1, 0)
	assert.Equal(t, map[string]int{fireKey("s", minute1): 1}, schedTasks(h.c, "s"))
	h.send(p, "cancel", "req", "c", "task_id", "2")
	h.expect(p, "cancelled")

	h.c.SetAvailable(false)
	h.at(minute1+60, 0)
	assert.Len(t, schedTasks(h.c, "s"), 1, "nothing fires while the log cannot be written")
	h.c.SetAvailable(true)
	h.at(minute1+61, 0)
	assert.Len(t, schedTasks(h.c, "s"), 2)
}

func TestSchedule_NextTickAtWakesForFireTime(t *testing.T) {
	h, p := newSchedHarness(t)
	h.addSched(p, "name", "s", "cron", "*/1 * * * *", "task_type", "t", "jitter_ms", "5000")
	h.at(schedStart+10, 0) // past the handshake deadline, which wakes first
	at, ok := h.c.NextTickAt()
	require.True(t, ok)
	assert.Equal(t, minute1*1000+jitter("s", minute1, 5000), at)
}

// Snapshots and log replay rebuild the schedules: paused, last fire
// time, firings and definition.
func TestSchedule_SnapshotAndReplay(t *testing.T) {
	h, p := newSchedHarness(t)
	h.addSched(p, "name", "a", "cron", "*/1 * * * *", "task_type", "t", "arg.k", "v\nw", "label", "nightly")
	h.addSched(p, "name", "b", "cron", "*/2 * * * *", "tz", "Test/Plus2", "missed", "catch_up", "jitter_ms", "100", "task_type", "u")
	h.addSched(p, "name", "gone", "cron", "@daily", "task_type", "t")
	h.at(minute1, 500)
	h.send(p, "schedule_pause", "req", "p", "name", "b")
	h.expect(p, "schedule_paused")
	h.send(p, "schedule_delete", "req", "d", "name", "gone")
	h.expect(p, "schedule_deleted")
	entries := snapshotEntries(t, h.c)
	snapAt := len(h.fx.records)
	h.at(minute1+60, 0)
	want := dump(h.c)
	require.Contains(t, want, `sched "a"`)
	require.NotContains(t, want, `sched "gone"`)
	h.checkReplay()
	assert.Equal(t, want, dump(h.loaded(entries, h.fx.records[snapAt:])))
	h.restartFrom(entries, snapAt)
	assert.Equal(t, schedLines(want), schedLines(dump(h.c)))
	h.at(minute1+120, 0)
	assert.Len(t, schedTasks(h.c, "a"), 3)
	assert.Len(t, schedTasks(h.c, "b"), 1, "still paused after the restart")
}

// A zone this host cannot load keeps the schedule, without firings.
func TestSchedule_ReplayWithUnknownZoneKeepsIt(t *testing.T) {
	h, p := newSchedHarness(t)
	h.addSched(p, "name", "b", "cron", "*/1 * * * *", "tz", "Test/Plus2", "task_type", "t")
	c, err := New(Config{Clock: h.clock, Logger: quietLogger(), Zone: func(string) (*time.Location, error) {
		return nil, fmt.Errorf("no zones here")
	}}, newRecorder())
	require.NoError(t, err)
	for _, r := range h.fx.records {
		require.NoError(t, c.ReplayRecord(r))
	}
	require.NotNil(t, c.scheds["b"])
	assert.Zero(t, c.scheds["b"].next)
	h.clock.T = time.Unix(minute1+5, 0)
	c.Tick()
	assert.Empty(t, schedTasks(c, "b"))
}

func TestSchedule_ListPages(t *testing.T) {
	h, p := newSchedHarness(t)
	for i := 0; i < 7; i++ {
		h.addSched(p, "name", fmt.Sprintf("s%d", i), "cron", "@hourly", "task_type", "t")
	}
	var names []string
	after := ""
	for {
		kv := []string{"req", "l", "limit", "3"}
		if after != "" {
			kv = append(kv, "after", after)
		}
		h.send(p, "schedule_list", kv...)
		m := h.expect(p, "schedules")
		n, err := m.Uint("count")
		require.NoError(t, err)
		for i := uint64(0); i < n; i++ {
			names = append(names, m.Value(fmt.Sprintf("sched.%d.name", i)))
		}
		if after = m.Value("next"); after == "" {
			break
		}
	}
	assert.Equal(t, []string{"s0", "s1", "s2", "s3", "s4", "s5", "s6"}, names)
	h.send(p, "schedule_list", "req", "l", "limit", "101")
	h.expectErr(p, wire.CodeBadRequest)
}

// latestDue after a year off, every second, takes few steps.
func TestSchedule_LongDowntimeIsCheap(t *testing.T) {
	h, p := newSchedHarness(t)
	h.addSched(p, "name", "s", "cron", "* * * * * *", "task_type", "t", "missed", "catch_up")
	year := schedStart + 365*24*3600
	h.at(year, 0)
	assert.Equal(t, map[string]int{fireKey("s", year): 1}, schedTasks(h.c, "s"))
}

// dumpSchedules renders the schedules for dump, by name.
func dumpSchedules(b *strings.Builder, c *Core) {
	for _, r := range c.scheduleEntries() {
		sc := c.scheds[r.sc.name]
		fmt.Fprintf(b, "sched %q %+v next=%d zone=%v\n", sc.name, r.sc, sc.next, sc.spec != nil)
	}
}

// schedLines keeps the schedule lines of a dump.
func schedLines(d string) []string {
	var out []string
	for _, l := range strings.Split(d, "\n") {
		if strings.HasPrefix(l, "sched ") {
			out = append(out, l)
		}
	}
	return out
}

// A run body fires a run keyed by the fire key; a crash between the run
// and the fire record makes no second run.
func TestSchedule_RunBody(t *testing.T) {
	h, p := newSchedHarness(t)
	h.addSched(p, "name", "etl", "cron", "*/1 * * * *", "run.name", "nightly", "run.steps", "2",
		"run.step.0.id", "fetch", "run.step.0.type", "fetch", "run.step.0.arg.src", "s3://x",
		"run.step.1.id", "load", "run.step.1.type", "load", "run.step.1.depends_on", "fetch",
		"run.step.1.arg.path", "${steps.fetch.out.path}")
	h.send(p, "schedule_list", "req", "l")
	l := h.expect(p, "schedules")
	assert.Equal(t, "nightly", l.Value("sched.0.run"))
	assert.False(t, l.Has("sched.0.task_type"))

	h.at(minute1, 0)
	key := fireKey("etl", minute1)
	require.Contains(t, h.c.runs.byKey, key)
	r := h.c.runs.byID[h.c.runs.byKey[key]]
	assert.Equal(t, "nightly", r.name)
	assert.Equal(t, key, r.trace)
	runs, tasks := len(h.c.runs.byID), h.c.nextID
	h.fx.records = h.fx.records[:len(h.fx.records)-1] // the fire record, lost in a crash
	h.restart()
	h.at(minute1, 300)
	assert.Len(t, h.c.runs.byID, runs, "the key found the run: none made twice")
	assert.Equal(t, tasks, h.c.nextID)
	assert.Equal(t, uint64(1), h.c.scheds["etl"].fires)
	h.at(minute1+60, 0)
	assert.Len(t, h.c.runs.byID, runs+1)
	h.checkReplay()
}
