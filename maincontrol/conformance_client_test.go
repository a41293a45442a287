package maincontrol_test

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/internal/syncbuf"
	"github.com/apollo11/apollo11/maincontrol"
	"github.com/apollo11/apollo11/maincontrol/core"
	"github.com/apollo11/apollo11/wire"
)

func TestConformance_SubmitDone(t *testing.T) {
	t.Parallel()
	addr := startServer(t, maincontrol.Config{})
	cl := clientPeer(t, addr)
	ex := executorPeer(t, addr, "e1", "t", 4)

	t.Run("submitted", func(t *testing.T) {
		m := cl.request("submit", "req", "r1", "task_type", "none")
		assertKeys(t, m, "type", "req", "task_id")
		assert.Equal(t, "submitted", m.Type())
		first := assertUint(t, m, "task_id")
		m = cl.request("submit", "req", "r2", "task_type", "none")
		assert.Equal(t, first+1, assertUint(t, m, "task_id"), "ids grow by one")
	})
	t.Run("duplicate key", func(t *testing.T) {
		id := cl.submit("k1", "task_type", "none", "key", "idem-1")
		m := cl.request("submit", "req", "k2", "task_type", "other", "key", "idem-1")
		assertKeys(t, m, "type", "req", "task_id", "duplicate")
		assert.Equal(t, "k2", m.Value("req"))
		assert.Equal(t, u(id), m.Value("task_id"))
		assert.Equal(t, "true", m.Value("duplicate"))
		assert.Equal(t, "none", cl.query(id).Value("task_type"), "the duplicate created nothing")
	})
	t.Run("done succeeded", func(t *testing.T) {
		m := cl.request("submit", "req", "w1", "task_type", "t", "wait", "true")
		require.Equal(t, "submitted", m.Type())
		id := assertUint(t, m, "task_id")
		task := ex.expectTask(id)
		ex.start(task)
		ex.finish(task, "status", "succeeded", "out.a", "1", "out.b", "two")
		d := cl.expect("done")
		assertKeys(t, d, "type", "req", "task_id", "state", "out.a", "out.b")
		assert.Equal(t, "w1", d.Value("req"), "done carries its submit's req")
		assert.Equal(t, u(id), d.Value("task_id"))
		assert.Equal(t, "succeeded", d.Value("state"))
		assert.Equal(t, "1", d.Value("out.a"))
		assert.Equal(t, "two", d.Value("out.b"))
	})
	t.Run("done failed with error", func(t *testing.T) {
		id := cl.submit("w2", "task_type", "t", "wait", "true", "max_attempts", "1")
		task := ex.expectTask(id)
		ex.start(task)
		ex.finish(task, "status", "failed", "error", "it broke", "out.log", "l")
		d := cl.expect("done")
		assertKeys(t, d, "type", "req", "task_id", "state", "out.log", "error")
		assert.Equal(t, "w2", d.Value("req"))
		assert.Equal(t, "failed", d.Value("state"))
		assert.Equal(t, "it broke", d.Value("error"))
	})
	t.Run("done cancelled, a duplicate waiter gets its own req", func(t *testing.T) {
		id := cl.submit("w3", "task_type", "none", "wait", "true", "key", "idem-w3")
		m := cl.request("submit", "req", "w3dup", "task_type", "none", "wait", "true", "key", "idem-w3")
		require.Equal(t, "true", m.Value("duplicate"))
		c := cl.request("cancel", "req", "c3", "task_id", u(id))
		// done frames and cancelled come in some order: match by req.
		got := map[string]string{}
		for _, m := range []*wire.Message{c, cl.recv(), cl.recv()} {
			got[m.Value("req")] = m.Type()
			if m.Type() == "done" {
				assert.Equal(t, "cancelled", m.Value("state"))
				assert.Equal(t, u(id), m.Value("task_id"))
			}
		}
		assert.Equal(t, map[string]string{"w3": "done", "w3dup": "done", "c3": "cancelled"}, got)
	})
	t.Run("duplicate of an ended task: done at once", func(t *testing.T) {
		m := cl.request("submit", "req", "again", "task_type", "none", "wait", "true", "key", "idem-w3")
		assert.Equal(t, "submitted", m.Type())
		assert.Equal(t, "true", m.Value("duplicate"))
		d := cl.expect("done")
		assert.Equal(t, "again", d.Value("req"))
		assert.Equal(t, "cancelled", d.Value("state"))
	})
	t.Run("depends_on", func(t *testing.T) {
		a := cl.submit("d1", "task_type", "none")
		b := cl.submit("d2", "task_type", "none", "depends_on", u(a)+","+u(a))
		assert.Equal(t, "waiting", cl.stateOf(b))
		cl.request("cancel", "req", "ca", "task_id", u(a))
		st := cl.query(b)
		assert.Equal(t, "cancelled", st.Value("state"))
		assert.Equal(t, "dependency "+u(a)+" cancelled", st.Value("error"))
		c := cl.submit("d3", "task_type", "none", "depends_on", u(a))
		st = cl.query(c)
		assert.Equal(t, "cancelled", st.Value("state"), "created, confirmed and cancelled at once")
		assert.Equal(t, "dependency "+u(a)+" cancelled", st.Value("error"))
	})
	t.Run("delay_ms", func(t *testing.T) {
		id := cl.submit("dl", "task_type", "t", "delay_ms", "200")
		assert.Equal(t, "pending", cl.stateOf(id))
		start := time.Now()
		task := ex.expectTask(id)
		assert.GreaterOrEqual(t, time.Since(start), 100*time.Millisecond, "not dispatched before its time")
		ex.start(task)
		ex.finish(task, "status", "succeeded")
	})
}

func TestConformance_Query(t *testing.T) {
	t.Parallel()
	addr := startServer(t, maincontrol.Config{Core: core.Config{RetryBase: 10 * time.Millisecond}})
	cl := clientPeer(t, addr)
	ex := executorPeer(t, addr, "e1", "t", 1)
	before := time.Now().UnixMilli()
	id := cl.submit("s", "task_type", "t", "max_attempts", "2", "trace_id", "tr")

	// The executor took it at once; query a task nobody takes too.
	pend := cl.submit("p", "task_type", "nobody")
	m := cl.query(pend)
	assertKeys(t, m, "type", "req", "task_id", "version", "state", "attempt", "max_attempts", "task_type",
		"created_ms", "updated_ms", "trace_id")
	assert.Equal(t, u(pend), m.Value("task_id"))
	assert.Equal(t, "0", m.Value("version"))
	assert.Equal(t, "pending", m.Value("state"))
	assert.Equal(t, "0", m.Value("attempt"))
	assert.Equal(t, "3", m.Value("max_attempts"))
	assert.Equal(t, "nobody", m.Value("task_type"))
	created := assertUint(t, m, "created_ms")
	assert.GreaterOrEqual(t, created, uint64(before))
	assert.LessOrEqual(t, created, uint64(time.Now().UnixMilli()))
	assert.GreaterOrEqual(t, assertUint(t, m, "updated_ms"), created)

	task := ex.expectTask(id)
	ex.start(task)
	ex.finish(task, "status", "failed", "error", "e=1", "out.o", "v")
	m = cl.waitState(id, "dispatched", 5*time.Second) // retried after its backoff
	assertKeys(t, m, "type", "req", "task_id", "version", "state", "attempt", "max_attempts", "task_type",
		"executor_id", "created_ms", "updated_ms", "trace_id")
	task = ex.expectTask(id)
	ex.start(task)
	ex.finish(task, "status", "failed", "error", "e=2", "out.o", "w")
	m = cl.query(id)
	// An ended task also shows its durations (protocol section 8.8).
	assertKeys(t, m, "type", "req", "task_id", "version", "state", "attempt", "max_attempts", "task_type",
		"executor_id", "error", "out.o", "created_ms", "updated_ms", "trace_id", "queued_ms", "run_ms")
	assertUint(t, m, "queued_ms")
	assertUint(t, m, "run_ms")
	assert.Equal(t, "failed", m.Value("state"))
	assert.Equal(t, "2", m.Value("version"))
	assert.Equal(t, "2", m.Value("attempt"))
	assert.Equal(t, "2", m.Value("max_attempts"))
	assert.Equal(t, "t", m.Value("task_type"))
	assert.Equal(t, "e1", m.Value("executor_id"))
	assert.Equal(t, "e=2", m.Value("error"))
	assert.Equal(t, "w", m.Value("out.o"))
	assert.Equal(t, "tr", m.Value("trace_id"))
}

func TestConformance_List(t *testing.T) {
	t.Parallel()
	addr := startServer(t, maincontrol.Config{})
	cl := clientPeer(t, addr)
	var ids []uint64
	for i := 0; i < 5; i++ {
		ids = append(ids, cl.submit("s", "task_type", "t"))
	}
	cl.request("cancel", "req", "c", "task_id", u(ids[2]))
	pending := []uint64{ids[0], ids[1], ids[3], ids[4]}
	join := func(xs ...uint64) string {
		s := make([]string, len(xs))
		for i, x := range xs {
			s[i] = u(x)
		}
		return strings.Join(s, ",")
	}
	tests := []struct {
		name  string
		kv    []string
		count string
		ids   string
		next  string // "" : absent
	}{
		{"default limit", []string{"state", "pending"}, "4", join(pending...), ""},
		{"first page", []string{"state", "pending", "limit", "2"}, "2", join(pending[:2]...), u(pending[1])},
		{"last page, exactly full", []string{"state", "pending", "limit", "2", "after", u(pending[1])}, "2", join(pending[2:]...), ""},
		{"after the last", []string{"state", "pending", "after", u(ids[4])}, "0", "", ""},
		{"limit 1", []string{"state", "pending", "limit", "1", "after", u(ids[0])}, "1", u(ids[1]), u(ids[1])},
		{"limit 1000", []string{"state", "pending", "limit", "1000"}, "4", join(pending...), ""},
		{"cancelled", []string{"state", "cancelled"}, "1", u(ids[2]), ""},
		{"empty state", []string{"state", "running"}, "0", "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := cl.request("list", append([]string{"req", "l"}, tc.kv...)...)
			require.Equal(t, "tasks", m.Type(), "got %s", m)
			if tc.next == "" {
				assertKeys(t, m, "type", "req", "count", "ids")
			} else {
				assertKeys(t, m, "type", "req", "count", "ids", "next")
				assert.Equal(t, tc.next, m.Value("next"))
			}
			assert.Equal(t, tc.count, m.Value("count"))
			assert.Equal(t, tc.ids, m.Value("ids"))
		})
	}
	for _, st := range []string{"waiting", "pending", "dispatched", "running", "retrying", "succeeded", "failed", "cancelled"} {
		m := cl.request("list", "req", "l", "state", st)
		assert.Equal(t, "tasks", m.Type(), "state %s: %s", st, m)
	}
}

func TestConformance_Stats(t *testing.T) {
	t.Parallel()
	addr := startServer(t, maincontrol.Config{})
	cl := clientPeer(t, addr)
	statesKeys := []string{"tasks.waiting", "tasks.pending", "tasks.dispatched", "tasks.running",
		"tasks.retrying", "tasks.succeeded", "tasks.failed", "tasks.cancelled"}
	check := func(t *testing.T, want map[string]string) {
		t.Helper()
		m := cl.request("stats", "req", "st")
		require.Equal(t, "stats", m.Type())
		assert.Equal(t, "st", m.Value("req"))
		for _, k := range append(statesKeys, "executors", "state_version", "uptime_ms") {
			assertUint(t, m, k)
		}
		for k, v := range want {
			assert.Equal(t, v, m.Value(k), k)
		}
	}
	t.Run("zeros included", func(t *testing.T) {
		want := map[string]string{"executors": "0", "state_version": "0"}
		for _, k := range statesKeys {
			want[k] = "0"
		}
		check(t, want)
	})
	t.Run("counts", func(t *testing.T) {
		ex := executorPeer(t, addr, "e1", "t", 1)
		executorPeer(t, addr, "e2", "u", 1)
		a := cl.submit("a", "task_type", "t")
		task := ex.expectTask(a)
		ex.start(task)
		ex.finish(task, "status", "succeeded", "state.set.k", "v")
		b := cl.submit("b", "task_type", "t")
		ex.expectTask(b)
		c := cl.submit("c", "task_type", "none")
		cl.submit("d", "task_type", "none", "depends_on", u(c))
		e := cl.submit("e", "task_type", "none")
		cl.request("cancel", "req", "x", "task_id", u(e))
		check(t, map[string]string{"tasks.succeeded": "1", "tasks.dispatched": "1", "tasks.pending": "1",
			"tasks.waiting": "1", "tasks.cancelled": "1", "tasks.running": "0", "tasks.failed": "0",
			"tasks.retrying": "0", "executors": "2", "state_version": "1"})
	})
	t.Run("uptime grows", func(t *testing.T) {
		m1 := cl.request("stats", "req", "1")
		time.Sleep(30 * time.Millisecond)
		m2 := cl.request("stats", "req", "2")
		assert.Greater(t, assertUint(t, m2, "uptime_ms"), assertUint(t, m1, "uptime_ms"))
	})
}

func TestConformance_Debug(t *testing.T) {
	t.Parallel()
	// At every log level: an operator who turns frame logging on asked to
	// see frames, even under --log-level warn or error.
	for _, level := range []slog.Level{slog.LevelDebug, slog.LevelInfo, slog.LevelWarn, slog.LevelError} {
		t.Run(level.String(), func(t *testing.T) {
			t.Parallel()
			debugFrames(t, level)
		})
	}
}

func debugFrames(t *testing.T, level slog.Level) {
	var logs syncbuf.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: level}))
	addr := startServer(t, maincontrol.Config{Logger: logger})
	cl := clientPeer(t, addr)
	for _, on := range []string{"true", "false"} {
		m := cl.request("debug", "req", "d-"+on, "on", on)
		assertKeys(t, m, "type", "req")
		assert.Equal(t, "debug_ok", m.Type())
		assert.Equal(t, "d-"+on, m.Value("req"))
	}
	cl.alive("while-off")
	assert.NotContains(t, logs.String(), "while-off", "frames are not logged while off")

	cl.request("debug", "req", "d", "on", "true")
	cl.submit("while-on", "task_type", "t")
	cl.alive("x")
	out := logs.String()
	assert.Contains(t, out, "req=while-on", "the submit is logged")
	assert.Contains(t, out, "type=submitted", "the reply is logged")

	// A big frame is logged cut short, with its size.
	cl.submit("big", "task_type", "t", "arg.big", strings.Repeat("z", 64<<10))
	cl.alive("y")
	out = logs.String()
	assert.Contains(t, out, "bytes=65")
	assert.Contains(t, out, "truncated=true")
	assert.NotContains(t, out, strings.Repeat("z", 5<<10), "a big payload is logged whole")
	cl.request("debug", "req", "d", "on", "false")
}

// Unknown keys MUST be ignored, in every message.
func TestConformance_UnknownKeysIgnored(t *testing.T) {
	t.Parallel()
	addr := startServer(t, maincontrol.Config{})
	x := []string{"zz.future", "1", "x-y_z", ""}
	cl := dialRaw(t, addr)
	assert.Equal(t, "hello_ok", cl.request("hello", append([]string{"req", "h"}, x...)...).Type())
	ex := dialRaw(t, addr)
	assert.Equal(t, "registered", ex.request("register", append([]string{"executor_id", "e1", "task_types", "t"}, x...)...).Type())
	with := func(kv ...string) []string { return append(kv, x...) }

	id := cl.submit("s", with("task_type", "t", "wait", "true")...)
	task := ex.expectTask(id)
	assert.False(t, task.Has("zz.future"), "unknown keys are not passed on")
	ex.send("started", with("task_id", u(id), "version", task.Value("version"))...)
	ex.send("progress", with("task_id", u(id), "version", task.Value("version"), "percent", "1")...)
	assert.Equal(t, "pong", ex.request("heartbeat", with("seq", "1", "running", u(id)+"."+task.Value("version"))...).Type())
	assert.Equal(t, "state", ex.request("state_get", with("req", "g")...).Type())
	ack := ex.request("result", with("task_id", u(id), "version", task.Value("version"), "status", "succeeded")...)
	assert.Equal(t, "true", ack.Value("accepted"))
	assert.Equal(t, "done", cl.expect("done").Type())
	for _, tc := range []struct {
		typ, reply string
		kv         []string
	}{
		{"query", "task_state", []string{"task_id", u(id)}},
		{"list", "tasks", []string{"state", "succeeded"}},
		{"stats", "stats", nil},
		{"state_get", "state", nil},
		{"debug", "debug_ok", []string{"on", "false"}},
		{"cancel", "cancelled", []string{"task_id", u(cl.submit("c", "task_type", "none"))}},
	} {
		m := cl.request(tc.typ, with(append([]string{"req", "r"}, tc.kv...)...)...)
		assert.Equal(t, tc.reply, m.Type(), "%s: %s", tc.typ, m)
	}
	assert.Equal(t, "bye_ack", ex.request("bye", x...).Type())
}
