package core

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sampleRecords has one record of every kind, with every field its kind
// encodes set to a value that is not the zero value (and large numbers, to
// use long varints).
func sampleRecords() []record {
	return []record{
		{kind: recNew, id: 1 << 40, typ: "type=x", priority: 9, maxAttempts: 1 << 63, timeoutMs: 12345,
			at: 1_700_000_000_123, due: -5, state: Waiting, key: "key\n", trace: "tr", deps: []uint64{1, 1 << 50, 3},
			argKeys: 2, args: "arg.a=1\narg.b=2", fields: fieldVals{fieldLabel: "batch 7"}},
		{kind: recNew, id: 2, typ: "x", state: Pending}, // empty strings and lists
		{kind: recDispatch, id: 7, version: 1<<32 - 1, attempt: 3, exec: "e1", at: 99, due: 5099},
		{kind: recDispatch, id: 7, version: 1<<64 - 1, attempt: 3, exec: "e1", at: 99, due: 5099},
		{kind: recStart, id: 7, version: 2, at: 100, due: -1},
		{kind: recStart, id: 7, version: 7<<32 | 1, at: 100, due: -1},
		{kind: recBack, id: 7, at: 101, why: "start timeout"},
		{kind: recRetry, id: 7, at: 102, due: 2000, errText: "boom", outKeys: 1<<16 - 1, out: "out.x=1"},
		{kind: recArm, id: 7, at: 103, due: 4000},
		{kind: recReady, id: 7, at: 104},
		{kind: recEnd, id: 7, at: 105, state: Succeeded, errText: "e", outKeys: 1, out: "out.y=2", stateVer: 42,
			sets: []kv{{"a", "1"}, {"b", ""}, {"", "x"}}},
		{kind: recEnd, id: 8, at: 106, state: Cancelled},
		{kind: recEnd, id: 9, at: 107, state: Failed, flags: flagTakenBack},
		{kind: recDrop, at: 107, ids: []uint64{1, 2, 1 << 62}},
		{kind: recExecReg, exec: "e-1:x", types: []string{"a", "b", ""}, slots: 65536},
		{kind: recExecGone, exec: "e-1:x", why: "bye"},
		{kind: snapMeta, nextID: 1 << 45, stateVer: 9, seqCounter: 1 << 33, regSeq: 4, epoch: 5},
		{kind: recSkipIDs, nextID: 1 << 40},
		{kind: recEpoch, epoch: 1<<32 - 1},
		{kind: snapState, key: "k", args: "v\x00"},
		{kind: snapTask, id: 9, maxAttempts: 5, timeoutMs: 6, created: 7, at: 8, due: 9, seq: 10, version: 11,
			attempt: 12, typ: "t", state: Retrying, priority: 3, flags: flagArmed | flagTakenBack, exec: "e",
			trace: "tr", argKeys: 1, args: "arg.a=1", key: "k", errText: "err", outKeys: 2, out: "out.a=1\nout.b=2",
			deps: []uint64{1, 2}, requeues: 3, why: "r", fields: fieldVals{fieldLabel: "l"}, startOff: 9},
		{kind: recRequeue, id: 9, at: 108, version: 12, state: Waiting, attempt: 2, why: "again"},
		{kind: recStateFix, key: "k", args: "v=1", on: true, stateVer: 7},
		{kind: recStateFix, key: "k", stateVer: 1 << 40},
		{kind: recPause, typ: "a b,c", on: true},
		{kind: recPause, typ: "x"},
		{kind: recExecTypes, exec: "e-1:x", types: []string{"a", ""}},
	}
}

// withoutFields returns r without the task field table's values.
func withoutFields(r record) record {
	r.fields = fieldVals{}
	return r
}

// normalized turns empty slices into nil, so records compare by value.
func normalized(r record) record {
	if len(r.deps) == 0 {
		r.deps = nil
	}
	if len(r.ids) == 0 {
		r.ids = nil
	}
	if len(r.types) == 0 {
		r.types = nil
	}
	if len(r.sets) == 0 {
		r.sets = nil
	}
	return r
}

func TestRecord_RoundTrip(t *testing.T) {
	kinds := map[recKind]bool{}
	var r record // reused, as the core does
	for _, want := range sampleRecords() {
		t.Run(want.kind.String(), func(t *testing.T) {
			kinds[want.kind] = true
			b := appendRecord(nil, &want)
			require.NoError(t, decodeRecord(b, &r))
			assert.Equal(t, normalized(want), normalized(r))
			// The encoding appends to dst.
			b2 := appendRecord([]byte("prefix"), &want)
			assert.Equal(t, b, b2[len("prefix"):])

			// Every strict prefix is refused, never a panic, but for a
			// meta entry without the epoch, as written before epochs, and
			// a task without the field table's values, as format v1 wrote.
			v1 := withoutFields(want)
			noFields := len(appendRecord(nil, &v1))
			for n := range len(b) {
				if want.kind == snapMeta && n == len(b)-1 {
					continue
				}
				// A ready or requeue record without its filled flag, as
				// written before runs.
				if (want.kind == recReady || want.kind == recRequeue) && !want.filled && n == len(b)-1 {
					continue
				}
				if n == noFields && !want.fields.empty() {
					continue
				}
				// A task entry without its start (1 byte here), its requeue
				// reason too (3), or its requeue fields too (4), as written
				// before durations and requeue.
				if want.kind == snapTask && (n == noFields-1 || n == noFields-3 || n == noFields-4) {
					continue
				}
				require.ErrorIs(t, decodeRecord(b[:n], &r), ErrCorrupt, "prefix of %d bytes", n)
			}
			// Fields a newer binary appended are ignored. It writes the
			// field table's count first, when a kind ends with it.
			newer := bytes.Clone(b)
			if (want.kind == recNew || want.kind == snapTask) && want.fields.empty() {
				newer = append(newer, 0)
			}
			newer = append(newer, 0x05, 3, 'n', 'e', 'w', 0xff)
			require.NoError(t, decodeRecord(newer, &r))
			assert.Equal(t, normalized(want), normalized(r))
		})
	}
	for k := recNew; k <= recExecTypes; k++ {
		assert.True(t, kinds[k], "no sample of %s", k)
	}
	assert.Equal(t, "kind99", recKind(99).String())
	assert.Equal(t, "kind0", recKind(0).String())
	require.ErrorIs(t, decodeRecord([]byte{0}, &r), ErrCorrupt)
	require.ErrorIs(t, decodeRecord([]byte{99, 1}, &r), ErrCorrupt)
	require.ErrorIs(t, decodeRecord(nil, &r), ErrCorrupt)
}

func TestRecord_Invalid(t *testing.T) {
	var r record
	end := appendRecord(nil, &record{kind: recEnd, id: 1, state: Failed})
	for _, s := range []byte{0, NumStates + 1, 255} {
		b := bytes.Clone(end)
		b[3] = s // kind, id, at (one byte each), state
		require.ErrorIs(t, decodeRecord(b, &r), ErrCorrupt, "state %d", s)
	}
	// Numbers out of range for their field.
	d := appendRecord(nil, &record{kind: recDispatch, id: 1, version: 1})
	d = append(d[:3], 0x80, 0x80, 0x80, 0x80, 0x10, 0, 0, 0) // attempt 2^32
	require.ErrorIs(t, decodeRecord(d, &r), ErrCorrupt)
	// A list or string longer than what is left.
	require.ErrorIs(t, decodeRecord([]byte{byte(recDrop), 0, 100, 1}, &r), ErrCorrupt)
	require.ErrorIs(t, decodeRecord([]byte{byte(recExecGone), 5, 'a'}, &r), ErrCorrupt)
	require.ErrorIs(t, decodeRecord([]byte{byte(recExecReg), 1, 'e', 200, 1, 'a'}, &r), ErrCorrupt)
	// A priority beyond 9 (it indexes the queues).
	for _, kind := range []recKind{recNew, snapTask} {
		for _, prio := range []uint8{9, 10, 255} {
			b := appendRecord(nil, &record{kind: kind, id: 1, typ: "x", state: Pending, priority: prio})
			if prio <= 9 {
				require.NoError(t, decodeRecord(b, &r))
			} else {
				require.ErrorIs(t, decodeRecord(b, &r), ErrCorrupt, "%s priority %d", kind, prio)
			}
		}
	}
	// An overlong varint.
	require.ErrorIs(t, decodeRecord([]byte{byte(recReady), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0}, &r), ErrCorrupt)
}

// TestRecord_OptionalTrailingFields pins the readers of fields added at
// the end of a kind: absent, they are zero values; present, they are read
// as the required ones are; cut short, the record is refused.
func TestRecord_OptionalTrailingFields(t *testing.T) {
	var e enc
	e.u(300)
	e.i(-7)
	e.s("x")
	full := e.b

	d := dec{b: full}
	assert.Equal(t, uint64(300), d.optU())
	assert.Equal(t, int64(-7), d.optI())
	assert.Equal(t, "x", d.optS())
	require.NoError(t, d.err)

	d = dec{} // an older record: none of them written
	assert.Equal(t, uint64(0), d.optU())
	assert.Equal(t, int64(0), d.optI())
	assert.Equal(t, "", d.optS())
	require.NoError(t, d.err)

	d = dec{b: full[:1]} // a varint cut in two is damage, not absence
	d.optU()
	require.ErrorIs(t, d.err, ErrCorrupt)
	d = dec{b: full[:len(full)-1]} // a string cut short
	d.optU()
	d.optI()
	d.optS()
	require.ErrorIs(t, d.err, ErrCorrupt)
}

// FuzzDecodeRecord: decodeRecord never panics; what it accepts re-encodes
// to a record that decodes the same; and a fresh core given the payload as
// a log record or a snapshot entry refuses it or applies it, never panics.
func FuzzDecodeRecord(f *testing.F) {
	for _, r := range sampleRecords() {
		f.Add(appendRecord(nil, &r))
	}
	f.Add([]byte("\x010\x000000\xb1\xb10\x02\x00\x00\x000\x00")) // priority 48: once a panic in enqueue
	f.Add([]byte{})
	f.Add([]byte{byte(recNew)})
	f.Add([]byte{byte(snapTask), 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		var r, r2 record
		if err := decodeRecord(b, &r); err != nil {
			require.ErrorIs(t, err, ErrCorrupt)
			return
		}
		again := appendRecord(nil, &r)
		require.NoError(t, decodeRecord(again, &r2))
		require.Equal(t, normalized(r), normalized(r2))

		cfg := Config{Logger: quietLogger(), Clock: &ManualClock{}}
		c, err := New(cfg, newRecorder())
		require.NoError(t, err)
		_ = c.ReplayRecord(b)
		c.Tick()
		c, _ = New(cfg, newRecorder())
		if c.LoadEntry(b) == nil {
			c.Recovered()
			c.Tick()
			_ = c.Freeze()
		}
	})
}
