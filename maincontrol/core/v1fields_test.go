package core

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/wire"
)

// v1Submit is a submit that gives every v1 field a value other than its
// default.
func v1Submit(dep uint64) []string {
	return []string{"task_type", "t", "priority", "7", "max_attempts", "5", "timeout_ms", "900",
		"delay_ms", "60000", "key", "k1", "trace_id", "tr-9", "depends_on", itoa(dep), "arg.a", "1"}
}

// Every v1 field a submit gives shows the same in TaskInfo live, after a
// replay of the log and after a snapshot: all three read one table.
func TestV1Fields_TaskInfoFromTheTable(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	dep := h.submit(cl, "task_type", "d")
	id := h.submit(cl, v1Submit(dep)...)
	want := TaskInfo{ID: id, Type: "t", Priority: 7, MaxAttempts: 5, TimeoutMs: 900, Key: "k1",
		TraceID: "tr-9", DependsOn: []uint64{dep}, Args: "arg.a=1", State: Waiting}
	check := func(how string) {
		t.Helper()
		got, ok := h.c.Task(id)
		require.True(t, ok, how)
		got.Created, got.Updated = time.Time{}, time.Time{}
		assert.Equal(t, want, got, how)
	}
	check("live")
	h.checkReplay()
	entries := snapshotEntries(t, h.c)
	h.restartFrom(entries, len(h.fx.records))
	check("from the snapshot")
	h.restart()
	check("from the log")
}

// The inspector shows the same v1 fields for a new-task record and for
// the snapshot entry of its task. Before the table, a snapshot entry
// showed neither priority, max_attempts, timeout_ms, key, trace_id nor
// depends_on.
func TestV1Fields_DescribeRecordAndSnapshotAlike(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	dep := h.submit(cl, "task_type", "d")
	id := h.submit(cl, v1Submit(dep)...)
	rec, err := DescribeRecord(h.fx.records[len(h.fx.records)-1])
	require.NoError(t, err)
	var snap Record
	for _, e := range snapshotEntries(t, h.c) {
		if d, err := DescribeRecord(e); err == nil && d.Kind == "snap_task" && d.TaskIDs[0] == id {
			snap = d
		}
	}
	require.NotEmpty(t, snap.Text)
	for _, want := range []string{"task_type=t", "priority=7", "max_attempts=5", "timeout_ms=900",
		"key=k1", "trace_id=tr-9", "depends_on=[" + itoa(dep) + "]"} {
		assert.Contains(t, rec.Text, want, "new record")
		assert.Contains(t, snap.Text, want, "snapshot entry")
	}
	assert.Contains(t, rec.Text, "not_before=", "the delay, on the new record only")
}

// A submit with several bad values is refused for the first in the
// spec's order of keys, which is the table's.
func TestV1Fields_FirstBadValueInTableOrder(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	bad := map[string]string{"task_type": "", "priority": "10", "max_attempts": "0", "timeout_ms": "-1",
		"delay_ms": "x", "key": "", "depends_on": "a,"}
	for i := range v1Fields {
		var kv []string
		if i != v1Type {
			kv = append(kv, "task_type", "t")
		}
		for _, row := range v1Fields[i:] {
			if v, ok := bad[row.key.String()]; ok {
				kv = append(kv, row.key.String(), v)
			}
		}
		kv = append(kv, "wait", "maybe")
		first := v1Fields[i].key.String()
		if _, ok := bad[first]; !ok {
			continue // trace_id takes any value
		}
		h.send(cl, "submit", append([]string{"req", "r"}, kv...)...)
		m := h.expectErr(cl, wire.CodeBadRequest)
		assert.True(t, strings.Contains(m.Value("message"), first), "want %s first: %s", first, m.Value("message"))
	}
	assert.Len(t, h.fx.records, 0)
}

// BenchmarkCore_SubmitFields submits tasks that give every v1 field but
// key and depends_on, and a label: the parse of a full submit.
func BenchmarkCore_SubmitFields(b *testing.B) {
	c, _ := benchCore(b, &ManualClock{T: time.UnixMilli(1_700_000_000_000)},
		func(cfg *Config) { cfg.MaxPendingBytes, cfg.MaxPending = -1, 1<<30 })
	const cl = PeerID(1)
	c.Open(cl)
	c.Handle(cl, msg("hello", "req", "h"))
	submit := msg("submit", "req", "r", "task_type", "echo", "priority", "3", "max_attempts", "4",
		"timeout_ms", "1000", "delay_ms", "0", "trace_id", "trace-1", "label", "batch", "arg.msg", "hello")
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		c.Handle(cl, submit)
	}
	b.StopTimer()
	if c.counts[Pending] != b.N {
		b.Fatalf("%d pending, want %d", c.counts[Pending], b.N)
	}
}
