package core

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/internal/syncbuf"
)

func TestState_Legal(t *testing.T) {
	// The table of spec section 6, written out independently.
	want := map[[2]State]bool{
		{Waiting, Pending}: true, {Waiting, Cancelled}: true,
		{Waiting, Failed}:     true, // protocol section 8.10: a step's output is missing
		{Pending, Dispatched}: true, {Pending, Cancelled}: true,
		{Dispatched, Running}: true, {Dispatched, Pending}: true, {Dispatched, Cancelled}: true,
		{Running, Succeeded}: true, {Running, Failed}: true, {Running, Retrying}: true, {Running, Cancelled}: true,
		{Retrying, Pending}: true, {Retrying, Cancelled}: true,
	}
	for from := State(0); from <= NumStates+1; from++ {
		for to := State(0); to <= NumStates+1; to++ {
			assert.Equal(t, want[[2]State{from, to}], Legal(from, to), "%s -> %s", from, to)
		}
	}
	for _, s := range AllStates {
		assert.Equal(t, s == Succeeded || s == Failed || s == Cancelled, s.Terminal(), "%s", s)
		if s.Terminal() {
			for _, to := range AllStates {
				assert.False(t, Legal(s, to), "nothing leaves terminal %s (to %s)", s, to)
			}
		}
		p, ok := ParseState(s.String())
		assert.True(t, ok)
		assert.Equal(t, s, p)
	}
	_, ok := ParseState("Pending")
	assert.False(t, ok, "state names are lower case")
	assert.Equal(t, "invalid", State(0).String())
	assert.Equal(t, "invalid", State(NumStates+1).String())
}

// taskIn builds a harness holding task 2 of type "x" in state s (task 1 is
// a pending task of an unserved type, its dependency when s is waiting),
// and an executor "e1" of type "x" with 4 slots.
func taskIn(t *testing.T, s State, mods ...func(*Config)) (*harness, PeerID, PeerID) {
	t.Helper()
	h := newHarness(t, mods...)
	cl := h.client()
	h.submit(cl, "task_type", "nobody")
	if s == Waiting {
		h.submit(cl, "task_type", "x", "depends_on", "1")
		ex := h.executor("e1", "x", 4)
		require.Equal(t, Waiting, h.state(2))
		return h, cl, ex
	}
	if s == Pending {
		h.submit(cl, "task_type", "x")
		ex := h.executor("e1", "other", 4)
		require.Equal(t, Pending, h.state(2))
		return h, cl, ex
	}
	ex := h.executor("e1", "x", 4)
	h.submit(cl, "task_type", "x", "max_attempts", "3")
	id, ver := h.task(ex)
	require.Equal(t, uint64(2), id)
	switch s {
	case Running, Retrying, Succeeded, Failed:
		h.start(ex, id, ver)
	case Cancelled:
		h.send(cl, "cancel", "req", "c", "task_id", "2")
		h.expect(cl, "cancelled")
	}
	switch s {
	case Retrying:
		h.accepted(ex, id, ver, "failed")
	case Succeeded:
		h.accepted(ex, id, ver, "succeeded")
	case Failed:
		h.accepted(ex, id, ver, "failed", "retryable", "false")
	}
	require.Equal(t, s, h.state(2))
	return h, cl, ex
}

// recordsTo builds the records that would move task t to state to, one
// per record kind that targets it.
func recordsTo(t *task, to State, now int64) []record {
	switch to {
	case Pending:
		return []record{
			{kind: recBack, id: t.id, at: now, why: "test"},
			{kind: recReady, id: t.id, at: now},
		}
	case Dispatched:
		return []record{{kind: recDispatch, id: t.id, version: t.version + 1, attempt: t.attempt + 1, exec: "e1", at: now, due: now + 5000}}
	case Running:
		return []record{{kind: recStart, id: t.id, version: t.version, at: now}}
	case Retrying:
		return []record{{kind: recRetry, id: t.id, at: now, due: now + 1000, errText: "test"}}
	case Succeeded, Failed, Cancelled:
		return []record{{kind: recEnd, id: t.id, at: now, state: to, errText: "test"}}
	}
	return nil // nothing moves a task to waiting but its creation
}

// TestCore_CommitTransitionTable drives every (from, to) pair through
// commit: a legal change is recorded and applied; an illegal one is refused
// and logged, and the state is left exactly as it was.
func TestCore_CommitTransitionTable(t *testing.T) {
	for _, from := range AllStates {
		for _, to := range AllStates {
			h, _, _ := taskIn(t, from)
			recs := recordsTo(h.get(2), to, h.c.now())
			if to == Waiting {
				require.Empty(t, recs)
				continue
			}
			for i := range recs {
				name := fmt.Sprintf("%s->%s/%s", from, to, recs[i].kind)
				t.Run(name, func(t *testing.T) {
					var buf syncbuf.Buffer
					h, _, _ := taskIn(t, from, withLog(&buf))
					r := recordsTo(h.get(2), to, h.c.now())[i]
					before, nrec := dump(h.c), len(h.fx.records)
					ok := h.c.commit(&r)
					if Legal(from, to) {
						require.True(t, ok, "legal change refused; log:\n%s", buf.String())
						assert.Equal(t, to, h.state(2))
						assert.Len(t, h.fx.records, nrec+1)
						h.checkReplay()
						return
					}
					require.False(t, ok, "illegal change accepted")
					assert.Equal(t, before, dump(h.c), "state changed")
					assert.Len(t, h.fx.records, nrec, "an illegal change was recorded")
					assert.Contains(t, buf.String(), "refused illegal change")
					assert.Contains(t, buf.String(), "task_id=2")
				})
			}
		}
	}
}

// TestCore_CheckRefuses covers the checks beyond the state table, both in
// commit (live) and in ReplayRecord (recovery).
func TestCore_CheckRefuses(t *testing.T) {
	tests := []struct {
		name  string
		state State
		rec   func(h *harness) record
	}{
		{"dispatch version repeats", Pending, func(h *harness) record {
			return record{kind: recDispatch, id: 2, version: 0, attempt: 1, exec: "e1", at: h.c.now()}
		}},
		{"dispatch to unknown executor", Pending, func(h *harness) record {
			return record{kind: recDispatch, id: 2, version: 1, attempt: 1, exec: "nobody", at: h.c.now()}
		}},
		{"started of an old version", Dispatched, func(h *harness) record {
			return record{kind: recStart, id: 2, version: 0, at: h.c.now()}
		}},
		{"started of a future version", Dispatched, func(h *harness) record {
			return record{kind: recStart, id: 2, version: 2, at: h.c.now()}
		}},
		{"ready of a pending task not delayed", Pending, func(h *harness) record {
			return record{kind: recReady, id: 2, at: h.c.now()}
		}},
		{"arm of a running task", Running, func(h *harness) record {
			return record{kind: recArm, id: 2, at: h.c.now(), due: h.c.now() + 1}
		}},
		{"arm of an armed retrying task", Retrying, func(h *harness) record {
			return record{kind: recArm, id: 2, at: h.c.now(), due: h.c.now() + 1}
		}},
		{"record for an unknown task", Pending, func(h *harness) record {
			return record{kind: recEnd, id: 99, at: h.c.now(), state: Cancelled}
		}},
		{"new task reusing an id", Pending, func(h *harness) record {
			return record{kind: recNew, id: 2, typ: "x", state: Pending, at: h.c.now()}
		}},
		{"new task below the next id", Pending, func(h *harness) record {
			return record{kind: recNew, id: 1, typ: "x", state: Pending, at: h.c.now()}
		}},
		{"new task already running", Pending, func(h *harness) record {
			return record{kind: recNew, id: 3, typ: "x", state: Running, at: h.c.now()}
		}},
		{"drop of a live task", Pending, func(h *harness) record {
			return record{kind: recDrop, ids: []uint64{2}, at: h.c.now()}
		}},
		{"drop of an unknown task", Succeeded, func(h *harness) record {
			return record{kind: recDrop, ids: []uint64{2, 77}, at: h.c.now()}
		}},
		{"executor leaves with tasks", Running, func(h *harness) record {
			return record{kind: recExecGone, exec: "e1"}
		}},
		{"unknown executor leaves", Running, func(h *harness) record {
			return record{kind: recExecGone, exec: "e9"}
		}},
		{"executor with a bad id", Pending, func(h *harness) record {
			return record{kind: recExecReg, exec: "bad id", types: []string{"x"}, slots: 1}
		}},
		{"executor with no slots", Pending, func(h *harness) record {
			return record{kind: recExecReg, exec: "e2", types: []string{"x"}, slots: 0}
		}},
		{"executor with too many slots", Pending, func(h *harness) record {
			return record{kind: recExecReg, exec: "e2", types: []string{"x"}, slots: 65537}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf syncbuf.Buffer
			h, _, _ := taskIn(t, tc.state, withLog(&buf))
			r := tc.rec(h)
			before, nrec := dump(h.c), len(h.fx.records)
			require.False(t, h.c.commit(&r), "accepted")
			assert.Equal(t, before, dump(h.c))
			assert.Len(t, h.fx.records, nrec)
			assert.Contains(t, buf.String(), "refused illegal change")

			// The same record in a log stops recovery, state unchanged.
			c := h.replayed()
			payload := appendRecord(nil, &r)
			require.Error(t, c.ReplayRecord(payload))
			assert.Equal(t, before, dump(c))
		})
	}
}

func TestCore_ReplayRefusesSnapshotEntries(t *testing.T) {
	h := newHarness(t)
	for _, r := range []record{
		{kind: snapMeta, nextID: 5},
		{kind: snapState, key: "k", args: "v"},
		{kind: snapTask, id: 1, typ: "x", state: Pending},
	} {
		err := h.c.ReplayRecord(appendRecord(nil, &r))
		require.ErrorIs(t, err, ErrCorrupt, "%s", r.kind)
		assert.True(t, strings.Contains(err.Error(), r.kind.String()))
	}
	// And log records are not snapshot entries.
	r := record{kind: recReady, id: 1}
	require.ErrorIs(t, h.c.LoadEntry(appendRecord(nil, &r)), ErrCorrupt)
}

func TestState_MarshalText(t *testing.T) {
	for _, s := range AllStates {
		b, err := json.Marshal(s)
		require.NoError(t, err)
		assert.Equal(t, `"`+s.String()+`"`, string(b))
	}
	for _, bad := range []State{0, NumStates + 1} {
		_, err := json.Marshal(bad)
		assert.ErrorContains(t, err, "invalid task state")
	}
}
