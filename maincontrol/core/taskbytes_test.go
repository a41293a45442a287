package core

import (
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/internal/syncbuf"
	"github.com/apollo11/apollo11/wire"
)

// checkTaskBytes requires the running totals to be what a recount of the
// table finds, and the log to rebuild them.
func (h *harness) checkTaskBytes() {
	h.t.Helper()
	p, r := h.c.countTaskBytes()
	require.Equal(h.t, p, h.c.PendingBytes(), "pending bytes")
	require.Equal(h.t, r, h.c.RetainedBytes(), "retained bytes")
	h.checkReplay()
}

// What a task counts: its type's name, args lines as kept, key, own
// trace_id, 8 bytes per distinct dependency, and the outputs and error of
// its latest result.
func TestTaskBytes_Rule(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	dep := h.submit(cl, "task_type", "typ")
	assert.Equal(t, int64(3), h.get(dep).bytes(), "just the type's name")
	id := h.submit(cl, "task_type", "typ", "key", "kk", "trace_id", "tr1", "depends_on", itoa(dep)+","+itoa(dep),
		"arg.a", "1", "arg.b", "x\ny")
	assert.Equal(t, int64(3+len("arg.a=1\narg.b=x\\ny")+2+3+DepBytes), h.get(id).bytes())
	assert.Equal(t, int64(3)+h.get(id).bytes(), h.c.PendingBytes())

	ex := h.executor("e1", "typ", 1)
	got, v := h.task(ex)
	require.Equal(t, dep, got)
	h.start(ex, dep, v)
	h.accepted(ex, dep, v, "failed", "error", "boom", "out.o", "12")
	require.Equal(t, Retrying, h.state(dep))
	assert.Equal(t, int64(3+len("boom")+len("out.o=12")), h.get(dep).bytes(), "a failed attempt's outputs and error count")
	h.checkTaskBytes()
	h.advance(time.Second) // backoff over: dispatched again, its last attempt's outputs dropped
	got, v = h.task(ex)
	require.Equal(t, dep, got)
	assert.Equal(t, int64(3), h.get(dep).bytes())
	h.start(ex, dep, v)
	h.accepted(ex, dep, v, "succeeded", "out.r", "xyz")
	assert.Equal(t, int64(3+len("out.r=xyz")), h.get(dep).bytes())
	assert.Equal(t, int64(3+len("out.r=xyz")), h.c.RetainedBytes())
	assert.Equal(t, h.get(id).bytes(), h.c.PendingBytes(), "the ended task moved to retained")
	h.checkTaskBytes()
}

// --max-pending-bytes: a submit that would take the bytes held by tasks
// not yet ended past the cap gets queue_full, exactly at the cap is let
// in, and ended tasks make room again. A keyed duplicate is still
// answered; a refused submit makes no task, no id and no record.
func TestCore_PendingBytesCap(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxPendingBytes = 100 })
	cl := h.client()
	a := h.submit(cl, "task_type", "x", "key", "k1", "arg.a", strings.Repeat("v", 82-DepBytes)) // 1 + 2 + 6 + 82-DepBytes
	require.Equal(t, int64(91-DepBytes), h.c.PendingBytes())
	b := h.submit(cl, "task_type", "x", "depends_on", itoa(a), "trace_id", "t", "arg.b", "") // 1 + DepBytes + 1 + 6
	require.Equal(t, Waiting, h.state(b))
	require.Equal(t, int64(99), h.c.PendingBytes())

	nrec, next := len(h.fx.records), h.c.nextID
	h.send(cl, "submit", "req", "c", "task_type", "x", "arg.c", "")
	m := h.expectErr(cl, wire.CodeQueueFull)
	assert.Equal(t, "c", m.Value("req"))
	assert.Equal(t, "queue full: tasks not yet ended hold 99 bytes; this submit's 7 more would pass --max-pending-bytes 100; retry later", m.Value("message"))
	d := h.submit(cl, "task_type", "x") // 1 byte: exactly at the cap
	require.Equal(t, int64(100), h.c.PendingBytes())
	h.send(cl, "submit", "req", "e", "task_type", "x")
	h.expectErr(cl, wire.CodeQueueFull)
	h.send(cl, "submit", "req", "f", "task_type", "x", "depends_on", itoa(a))
	h.expectErr(cl, wire.CodeQueueFull)
	assert.Len(t, h.fx.records, nrec+1, "only d made a record")
	assert.Equal(t, next+1, h.c.nextID, "refused submits make no id")

	h.send(cl, "submit", "req", "dup", "task_type", "x", "key", "k1", "arg.a", strings.Repeat("v", 500))
	m = h.expect(cl, "submitted")
	assert.Equal(t, itoa(a), m.Value("task_id"))
	assert.Equal(t, "true", m.Value("duplicate"), "a duplicate is never queue_full")

	// a ends, b is cancelled with it: their bytes move to the ended tasks.
	h.send(cl, "cancel", "req", "x", "task_id", itoa(a))
	h.expect(cl, "cancelled")
	require.Equal(t, Cancelled, h.state(b))
	assert.Equal(t, int64(1), h.c.PendingBytes())
	assert.Equal(t, int64(99+len("dependency 1 cancelled")), h.c.RetainedBytes())
	h.submit(cl, "task_type", "x", "arg.c", "")
	assert.Equal(t, int64(8), h.c.PendingBytes())

	ex := h.executor("e1", "x", 1)
	got, v := h.task(ex)
	require.Equal(t, d, got)
	h.start(ex, d, v)
	h.accepted(ex, d, v, "succeeded", "out.r", "xyz")
	assert.Equal(t, int64(7), h.c.PendingBytes())
	h.checkTaskBytes()
}

// The count cap still holds with room in bytes, and says so.
func TestCore_PendingBytesCountCapFirst(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxPending = 2; c.MaxPendingBytes = 1000 })
	cl := h.client()
	h.submit(cl, "task_type", "x")
	h.submit(cl, "task_type", "x")
	h.send(cl, "submit", "req", "s", "task_type", "x")
	m := h.expectErr(cl, wire.CodeQueueFull)
	assert.Equal(t, "queue full: 2 tasks not yet ended; retry later", m.Value("message"))
}

// A task that alone holds more than the cap could never get in: that
// submit is a bad_request, not queue_full, whatever the queue holds.
func TestCore_PendingBytesTooLargeAlone(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxPendingBytes = 10 })
	cl := h.client()
	h.send(cl, "submit", "req", "s", "task_type", "x", "arg.a", "1234") // 1 + 10
	m := h.expectErr(cl, wire.CodeBadRequest)
	assert.Equal(t, "submit too large: its task would hold 11 bytes, more than --max-pending-bytes 10", m.Value("message"))
	h.submit(cl, "task_type", "x", "arg.a", "123") // 10: fits an empty queue
	h.send(cl, "submit", "req", "s", "task_type", "x")
	h.expectErr(cl, wire.CodeQueueFull)
	assert.Zero(t, h.c.RetainedBytes())
}

// -1: no cap; the totals are still kept.
func TestCore_PendingBytesNoCap(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxPendingBytes = -1 })
	cl := h.client()
	big := strings.Repeat("v", 100_000)
	for range 50 {
		h.submit(cl, "task_type", "x", "arg.a", big)
	}
	assert.Equal(t, int64(50*(1+6+len(big))), h.c.PendingBytes())
}

// Replay refuses nothing: a cap lowered across a restart keeps the tasks
// found, warns, and refuses submits until enough tasks end.
func TestCore_PendingBytesCapLoweredAcrossRestart(t *testing.T) {
	for _, fromSnapshot := range []bool{false, true} {
		name := "log"
		if fromSnapshot {
			name = "snapshot"
		}
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, func(c *Config) { c.MaxPendingBytes = 300 })
			cl := h.client()
			var ids []uint64
			for range 3 {
				ids = append(ids, h.submit(cl, "task_type", "x", "arg.a", strings.Repeat("v", 93))) // 100 each
			}
			require.Equal(t, int64(300), h.c.PendingBytes())

			var buf syncbuf.Buffer
			h.cfg.MaxPendingBytes = 100
			h.cfg.Logger = slog.New(slog.NewTextHandler(&buf, nil))
			if fromSnapshot {
				h.restartFrom(snapshotEntries(t, h.c), len(h.fx.records))
			} else {
				h.restart()
			}
			assert.Equal(t, 3, h.c.nonTerminal(), "kept")
			assert.Equal(t, int64(300), h.c.PendingBytes())
			assert.Contains(t, buf.String(), `level=WARN msg="tasks not yet ended hold more than --max-pending-bytes`)
			assert.Contains(t, buf.String(), "pending_bytes=300 max_pending_bytes=100 tasks=3")

			cl = h.client()
			h.send(cl, "submit", "req", "s", "task_type", "x")
			h.expectErr(cl, wire.CodeQueueFull)
			for _, id := range ids[:2] {
				h.send(cl, "cancel", "req", "c", "task_id", itoa(id))
				h.expect(cl, "cancelled")
			}
			h.send(cl, "submit", "req", "s", "task_type", "x")
			h.expectErr(cl, wire.CodeQueueFull) // 100 + 1
			h.send(cl, "cancel", "req", "c", "task_id", itoa(ids[2]))
			h.expect(cl, "cancelled")
			h.submit(cl, "task_type", "x")
			h.checkTaskBytes()
		})
	}
}

// Under the cap at start: no warning of tasks over it.
func TestCore_PendingBytesRestartQuietUnderCap(t *testing.T) {
	var buf syncbuf.Buffer
	h := newHarness(t, func(c *Config) {
		c.MaxPendingBytes = 100
		c.Logger = slog.New(slog.NewTextHandler(&buf, nil))
	})
	cl := h.client()
	h.submit(cl, "task_type", "x", "arg.a", strings.Repeat("v", 93))
	h.restart()
	assert.Equal(t, int64(100), h.c.PendingBytes())
	assert.NotContains(t, buf.String(), "tasks not yet ended hold more than --max-pending-bytes")
}

// A byte cap below what one task may hold is worth a word at start.
func TestCore_WarnsOfByteCapsBelowATask(t *testing.T) {
	for _, tc := range []struct {
		name          string
		pending, kept int
		warn          []string
	}{
		{"defaults", 0, 0, nil},
		{"no caps", -1, -1, nil},
		{"pending below a frame", 1 << 19, 0, []string{"--max-pending-bytes is below --max-frame"}},
		{"kept below two frames", 0, 3 << 19, []string{"--retention-max-bytes is below twice --max-frame"}},
		{"both", 100, 100, []string{"--max-pending-bytes is below", "--retention-max-bytes is below"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf syncbuf.Buffer
			newHarness(t, func(c *Config) {
				c.MaxPendingBytes, c.RetentionMaxBytes = tc.pending, tc.kept
				c.Logger = slog.New(slog.NewTextHandler(&buf, nil))
			})
			for _, w := range tc.warn {
				assert.Contains(t, buf.String(), w)
			}
			if tc.warn == nil {
				assert.NotContains(t, buf.String(), "is below")
			}
		})
	}
}

func TestConfig_MaxPendingBytes(t *testing.T) {
	for _, tc := range []struct{ in, want int }{
		{0, DefaultMaxPendingBytes},
		{-1, -1},
		{1, 1},
	} {
		c, err := Config{MaxPendingBytes: tc.in}.withDefaults()
		require.NoError(t, err)
		assert.Equal(t, tc.want, c.MaxPendingBytes, "MaxPendingBytes %d", tc.in)
	}
	assert.Equal(t, 512<<20, DefaultMaxPendingBytes)
}

// cancelAll cancels the tasks in order, each ending after the one before.
func (h *harness) cancelAll(cl PeerID, ids ...uint64) {
	h.t.Helper()
	for _, id := range ids {
		h.send(cl, "cancel", "req", "c", "task_id", itoa(id))
		h.expect(cl, "cancelled")
	}
}

// --retention-max-bytes: while the ended tasks kept hold more than the
// cap, the oldest ended are forgotten at the next tick, as past
// --retention-max, their keys with them.
func TestCore_RetentionMaxBytes(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.RetentionMaxBytes = 100 })
	cl := h.client()
	var ids []uint64
	for i := range 3 {
		ids = append(ids, h.submit(cl, "task_type", "x", "key", fmt.Sprint("k", i), "arg.a", strings.Repeat("v", 31))) // 40
	}
	h.cancelAll(cl, ids[1], ids[0], ids[2]) // ids[1] ended first
	assert.Equal(t, int64(120), h.c.RetainedBytes(), "over until the next tick")
	h.advance(time.Millisecond)
	assert.Nil(t, h.c.tasks.get(ids[1]), "the oldest ended is forgotten")
	assert.NotNil(t, h.c.tasks.get(ids[0]))
	assert.NotNil(t, h.c.tasks.get(ids[2]))
	assert.Equal(t, int64(80), h.c.RetainedBytes())
	h.send(cl, "query", "req", "q", "task_id", itoa(ids[1]))
	h.expectErr(cl, wire.CodeUnknownTask)
	assert.NotEqual(t, ids[1], h.submit(cl, "task_type", "x", "key", "k1"), "its key is free again")
	assert.Equal(t, ids[0], h.submit(cl, "task_type", "x", "key", "k0"), "a kept task's key is not")

	// Exactly at the cap: kept. One byte over: the oldest goes.
	h.cancelAll(cl, h.submit(cl, "task_type", "x", "arg.a", strings.Repeat("v", 13))) // 20
	h.advance(time.Millisecond)
	assert.Equal(t, int64(100), h.c.RetainedBytes())
	assert.Equal(t, 3, h.c.terminal())
	h.cancelAll(cl, h.submit(cl, "task_type", "y"))
	h.advance(time.Millisecond)
	assert.Nil(t, h.c.tasks.get(ids[0]))
	assert.Equal(t, int64(61), h.c.RetainedBytes())

	// An ended task larger than the cap alone: oldest first, every older
	// one goes, but it stays while it is the newest ended task, so that
	// its key outlives a retry of its submit; the next end takes it.
	big := h.submit(cl, "task_type", "x", "key", "big", "arg.a", strings.Repeat("v", 200))
	h.cancelAll(cl, big)
	h.advance(time.Millisecond)
	assert.NotNil(t, h.c.tasks.get(big), "the newest ended task stays")
	assert.Equal(t, 1, h.c.terminal())
	assert.Equal(t, int64(210), h.c.RetainedBytes())
	assert.Equal(t, big, h.submit(cl, "task_type", "x", "key", "big"), "its key still answers")
	h.cancelAll(cl, h.submit(cl, "task_type", "y"))
	h.advance(time.Millisecond)
	assert.Nil(t, h.c.tasks.get(big))
	assert.Equal(t, 1, h.c.terminal())
	assert.Equal(t, int64(1), h.c.RetainedBytes())
	h.checkTaskBytes()
}

// -1: the ended tasks are kept whatever they hold, up to --retention-max.
func TestCore_RetentionMaxBytesNoCap(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.RetentionMaxBytes = -1; c.RetentionMax = 5 })
	cl := h.client()
	big := strings.Repeat("v", 100_000)
	for range 10 {
		h.cancelAll(cl, h.submit(cl, "task_type", "x", "arg.a", big))
	}
	h.advance(time.Millisecond)
	assert.Equal(t, 5, h.c.terminal(), "the count cap still holds")
	assert.Equal(t, int64(5*(1+6+len(big))), h.c.RetainedBytes())
}

// A cap lowered across a restart keeps every ended task on replay, warns,
// and forgets the oldest past it at the first tick.
func TestCore_RetentionMaxBytesLoweredAcrossRestart(t *testing.T) {
	for _, fromSnapshot := range []bool{false, true} {
		name := "log"
		if fromSnapshot {
			name = "snapshot"
		}
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, func(c *Config) { c.RetentionMaxBytes = 300 })
			cl := h.client()
			var ids []uint64
			for range 3 {
				ids = append(ids, h.submit(cl, "task_type", "x", "arg.a", strings.Repeat("v", 93))) // 100 each
			}
			h.cancelAll(cl, ids...)
			h.advance(time.Millisecond)
			require.Equal(t, int64(300), h.c.RetainedBytes())

			var buf syncbuf.Buffer
			h.cfg.RetentionMaxBytes = 100
			h.cfg.Logger = slog.New(slog.NewTextHandler(&buf, nil))
			if fromSnapshot {
				h.restartFrom(snapshotEntries(t, h.c), len(h.fx.records))
			} else {
				h.restart()
			}
			assert.Equal(t, 3, h.c.terminal(), "replay keeps them")
			assert.Equal(t, int64(300), h.c.RetainedBytes())
			assert.Contains(t, buf.String(), `level=WARN msg="ended tasks kept hold more than --retention-max-bytes`)
			assert.Contains(t, buf.String(), "retained_bytes=300 retention_max_bytes=100 tasks=3")
			assert.NotContains(t, buf.String(), "max-pending-bytes")
			h.advance(time.Millisecond)
			assert.Nil(t, h.c.tasks.get(ids[0]))
			assert.Nil(t, h.c.tasks.get(ids[1]))
			assert.NotNil(t, h.c.tasks.get(ids[2]))
			assert.Equal(t, int64(100), h.c.RetainedBytes())
			h.checkTaskBytes()
		})
	}
}

func TestConfig_RetentionMaxBytes(t *testing.T) {
	for _, tc := range []struct{ in, want int }{
		{0, DefaultRetentionMaxBytes},
		{-1, -1},
		{1, 1},
	} {
		c, err := Config{RetentionMaxBytes: tc.in}.withDefaults()
		require.NoError(t, err)
		assert.Equal(t, tc.want, c.RetentionMaxBytes, "RetentionMaxBytes %d", tc.in)
	}
	assert.Equal(t, 256<<20, DefaultRetentionMaxBytes)
}

// The appendix of docs/protocol.md and docs/operations.md state the caps' numbers
// and rules as the code has them.
func TestProtocolDoc_TaskByteCaps(t *testing.T) {
	b, err := os.ReadFile("../../docs/protocol.md")
	require.NoError(t, err)
	doc := string(b)
	i := strings.Index(doc, "- **Bytes held by tasks.**")
	require.Greater(t, i, strings.Index(doc, "## Appendix: apollo11's readings"), "a reading of the appendix")
	bullet := doc[i:]
	bullet = strings.Join(strings.Fields(bullet[:strings.Index(bullet[1:], "\n- ")+1]), " ")
	for _, want := range []string{
		"`--max-pending-bytes` (default " + fmt.Sprint(DefaultMaxPendingBytes>>20) + " MiB; `-1` for no cap)",
		"`--retention-max-bytes` (default " + fmt.Sprint(DefaultRetentionMaxBytes>>20) + " MiB; `-1` for no cap)",
		fmt.Sprint(DepBytes) + " bytes per `depends_on` id",
		"`error code=queue_full`", "`bad_request`", "never refused when replayed",
		"`pending_bytes` and `retained_bytes`",
	} {
		assert.Contains(t, bullet, want)
	}
	assert.Contains(t, strings.Join(strings.Fields(doc), " "), "`pending_bytes` and `retained_bytes` (see \"Bytes held by tasks\")",
		"listed among the extra stats keys")

	b, err = os.ReadFile("../../docs/operations.md")
	require.NoError(t, err)
	ops := strings.Join(strings.Fields(string(b)), " ")
	assert.Contains(t, ops, "`--max-pending-bytes` ("+fmt.Sprint(DefaultMaxPendingBytes>>20)+" MiB)")
	assert.Contains(t, ops, "`--retention-max-bytes` ("+fmt.Sprint(DefaultRetentionMaxBytes>>20)+" MiB)")
	assert.Contains(t, ops, fmt.Sprintf("%d bytes per `depends_on` id", DepBytes))
	assert.Contains(t, ops, "`apollo11_pending_bytes`")
	assert.Contains(t, ops, "`apollo11_retained_bytes`")
}

// What a submit is checked against before its task exists (submitBytes,
// from the parsed frame) is what the task then counts.
func TestSubmitBytes_MatchesTheTask(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxPendingBytes = -1 })
	cl := h.client()
	dep := h.submit(cl, "task_type", "d")
	for _, kv := range [][]string{
		{"task_type", "x"},
		{"task_type", "x", "arg.a", "1"},
		{"task_type", "long-type-name", "arg.a", "1", "arg.b", "x\ny=z\\", "arg.c", ""},
		{"task_type", "x", "key", "k", "trace_id", "0123456789abcdef0123456789abcdef", "arg.a", "v"},
		{"task_type", "x", "depends_on", itoa(dep) + "," + itoa(dep), "arg.a", "v"},
	} {
		m := msg("submit", append([]string{"req", "r"}, kv...)...)
		var f submitFields
		f.scan(m)
		var s submitReq
		require.NoError(t, h.c.parseSubmit(&f, &s), "%v", kv)
		want := submitBytes(&s, f.args)
		id := h.submit(cl, kv...)
		assert.Equal(t, h.get(id).bytes(), want, "%v", kv)
	}
}

// A submit refused for bytes copies none of its args: under a storm of
// refused 100 KB submits the core must not allocate what it refuses.
func TestCore_RefusedSubmitCopiesNoArgs(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxPendingBytes = 50_000 })
	cl := h.client()
	h.submit(cl, "task_type", "x", "arg.a", strings.Repeat("v", 40_000))
	big := msg("submit", "req", "r", "task_type", "x", "arg.a", strings.Repeat("v", 20_000))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	const n = 50
	for range n {
		h.c.Handle(cl, big)
	}
	runtime.ReadMemStats(&after)
	for range n {
		h.expectErr(cl, wire.CodeQueueFull)
	}
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(n*5_000), "refused submits allocated their args")
}
