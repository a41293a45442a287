package core

import (
	"encoding/hex"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The bytes below were written by the hand-coded encodings that the
// v1Fields rows replaced. A data dir written before must read the same.

// goldenNew is the new-task record of goldenSubmit's task.
const goldenNew = "010204747970650705840780a0abfef962c0c9b2fef96201026b3103747231010101076172672e613d31030c6e696768746c7920c2b720370474727565066661696c6564"

// goldenNewEntry is the snapshot entry of goldenSubmit's task.
const goldenNewEntry = "0e0205840780a0abfef96280a0abfef962c0c9b2fef9620000000474797065010700000374723101076172672e613d31026b310000000101000000030c6e696768746c7920c2b720370474727565066661696c6564"

// goldenEntry is the snapshot entry of a task with every field set.
const goldenEntry = "0e" + "09" + "05" + "06" + "0e" + "10" + "12" + "0a" + "0b" + "0c" + "0174" + "05" + "03" + "0a" +
	"0165" + "027472" + "01" + "076172672e613d31" + "016b" + "03657272" + "02" + "0f6f75742e613d310a6f75742e623d32" +
	"020102" + "03" + "0172" + "09" + "03" + "016c" + "0474727565" + "066661696c6564"

// goldenSubmit submits, on a new harness, a task that gives every field
// of v1Fields and taskFields a value, on a dependency that waits.
func goldenSubmit(t *testing.T) (*harness, uint64) {
	h := newHarness(t)
	cl := h.client()
	dep := h.submit(cl, "task_type", "d")
	id := h.submit(cl, "task_type", "type", "priority", "7", "max_attempts", "5", "timeout_ms", "900",
		"delay_ms", "60000", "key", "k1", "trace_id", "tr1", "depends_on", itoa(dep), "arg.a", "1",
		"label", "nightly · 7", "optional", "true", "when", "failed")
	return h, id
}

// taskEntryOf returns the snapshot entry of task id.
func taskEntryOf(t *testing.T, c *Core, id uint64) []byte {
	t.Helper()
	for _, e := range snapshotEntries(t, c) {
		var r record
		require.NoError(t, decodeRecord(e, &r))
		if r.kind == snapTask && r.id == id {
			return e
		}
	}
	t.Fatalf("no snapshot entry of task %d", id)
	return nil
}

// A submit with every field writes the bytes it wrote before the rows
// drove the encodings, in its record and in its snapshot entry. The
// same bytes replayed or loaded into a new core give them back.
func TestV1Golden_SubmitRecordAndEntry(t *testing.T) {
	h, id := goldenSubmit(t)
	assert.Equal(t, goldenNew, hex.EncodeToString(h.fx.records[len(h.fx.records)-1]), "new-task record")
	assert.Equal(t, goldenNewEntry, hex.EncodeToString(taskEntryOf(t, h.c, id)), "snapshot entry")

	h.restart()
	assert.Equal(t, goldenNewEntry, hex.EncodeToString(taskEntryOf(t, h.c, id)), "after a replay of the log")
	entry, err := hex.DecodeString(goldenNewEntry)
	require.NoError(t, err)
	c, err := New(h.cfg, newRecorder())
	require.NoError(t, err)
	require.NoError(t, c.LoadEntry(entry)) // alone: recovery would cancel it for its missing dependency
	assert.Equal(t, goldenNewEntry, hex.EncodeToString(taskEntryOf(t, c, id)), "after a load of the entry")
	info, ok := c.Task(id)
	require.True(t, ok)
	assert.Equal(t, TaskInfo{ID: id, MaxAttempts: 5, TimeoutMs: 900, State: Waiting, Priority: 7, Type: "type",
		TraceID: "tr1", Key: "k1", Args: "arg.a=1", DependsOn: []uint64{1}, Created: info.Created,
		Updated: info.Updated, Label: "nightly · 7", Optional: "true", When: "failed"}, info)
}

// A snapshot entry with every field set, its runtime ones too, encodes
// as before, decodes to the same record, and loads into a core that
// writes it back byte for byte.
func TestV1Golden_FullEntry(t *testing.T) {
	full := record{kind: snapTask, id: 9, maxAttempts: 5, timeoutMs: 6, created: 7, at: 8, due: 9, seq: 10,
		version: 11, attempt: 12, typ: "t", state: Retrying, priority: 3, flags: flagArmed | flagTakenBack,
		exec: "e", trace: "tr", argKeys: 1, args: "arg.a=1", key: "k", errText: "err", outKeys: 2,
		out: "out.a=1\nout.b=2", deps: []uint64{1, 2}, requeues: 3, why: "r", startOff: 9,
		fields: fieldVals{fieldLabel: "l", fieldOptional: "true", fieldWhen: "failed"}}
	b := appendRecord(nil, &full)
	assert.Equal(t, goldenEntry, hex.EncodeToString(b))
	var r record
	require.NoError(t, decodeRecord(b, &r))
	assert.Equal(t, full, r)

	c, err := New(newHarness(t).cfg, newRecorder())
	require.NoError(t, err)
	require.NoError(t, c.LoadEntry(b))
	c.Recovered()
	assert.Equal(t, goldenEntry, hex.EncodeToString(taskEntryOf(t, c, 9)))
}

// Every row of v1Fields has its coders: each writes its value and reads
// back what it wrote.
func TestV1Codec_EveryRow(t *testing.T) {
	coders := [numV1Fields]struct {
		put func(*enc, *record)
		get func(*dec, *record)
	}{
		v1Type:        {(*enc).v1Type, (*dec).v1Type},
		v1Priority:    {(*enc).v1Priority, (*dec).v1Priority},
		v1MaxAttempts: {(*enc).v1MaxAttempts, (*dec).v1MaxAttempts},
		v1Timeout:     {(*enc).v1Timeout, (*dec).v1Timeout},
		v1Delay:       {(*enc).v1Delay, (*dec).v1Delay},
		v1Key:         {(*enc).v1Key, (*dec).v1Key},
		v1Trace:       {(*enc).v1Trace, (*dec).v1Trace},
		v1Deps:        {(*enc).v1Deps, (*dec).v1Deps},
	}
	full := record{typ: "t", priority: 3, maxAttempts: 4, timeoutMs: 5, due: 6, key: "k", trace: "tr", deps: []uint64{7}}
	var all enc
	for i, c := range coders {
		require.NotNil(t, c.put, v1Fields[i].key.String())
		var e enc
		c.put(&e, &full)
		c.put(&all, &full)
		require.NotEmpty(t, e.b, v1Fields[i].key.String())
		var r record
		d := dec{b: e.b}
		c.get(&d, &r)
		require.NoError(t, d.err)
		assert.Empty(t, d.b, v1Fields[i].key.String())
	}
	var r record
	d := dec{b: all.b}
	for _, c := range coders {
		c.get(&d, &r)
	}
	require.NoError(t, d.err)
	assert.Equal(t, full, r)
}
