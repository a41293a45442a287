package core

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/wire"
)

// Tests of the submit keys optional and when (steps.go).

// endAs ends task id, dispatched to executor ex next, as status
// (succeeded or failed, not retried), or cancels it by client cl.
func (h *harness) endAs(cl, ex PeerID, id uint64, status string) {
	h.t.Helper()
	if status == "cancelled" {
		h.send(cl, "cancel", "req", "c", "task_id", itoa(id))
		h.expect(cl, "cancelled")
		return
	}
	tid, ver := h.task(ex)
	require.Equal(h.t, id, tid, "dispatched next")
	h.start(ex, id, ver)
	h.accepted(ex, id, ver, status, "retryable", "false")
	require.Equal(h.t, status, h.state(id).String())
}

func TestSteps_OptionalAndWhenFailed(t *testing.T) {
	type step struct {
		dep    string // the dependency that ends, by name
		status string // succeeded, failed or cancelled
	}
	type spec struct {
		name, deps string // deps by name, comma-separated
		optional   bool
		whenFailed bool
	}
	cases := []struct {
		name  string
		tasks []spec
		ends  []step
		want  map[string]string // task name -> state, or state/error
	}{
		{"an optional failure releases its dependent",
			[]spec{{name: "a", optional: true}, {name: "b", deps: "a"}},
			[]step{{"a", "failed"}},
			map[string]string{"b": "pending"}},
		{"an optional cancel releases its dependent",
			[]spec{{name: "a", optional: true}, {name: "b", deps: "a"}},
			[]step{{"a", "cancelled"}},
			map[string]string{"b": "pending"}},
		{"a required failure still cancels",
			[]spec{{name: "a"}, {name: "b", deps: "a"}},
			[]step{{"a", "failed"}},
			map[string]string{"b": "cancelled/dependency a failed"}},
		{"a chain of optionals, each failing",
			[]spec{{name: "a", optional: true}, {name: "b", deps: "a", optional: true}, {name: "c", deps: "b"}},
			[]step{{"a", "failed"}, {"b", "failed"}},
			map[string]string{"c": "pending"}},
		{"an optional task cancelled by its dependency releases its own",
			[]spec{{name: "a"}, {name: "b", deps: "a", optional: true}, {name: "c", deps: "b"}, {name: "d", deps: "c"}},
			[]step{{"a", "failed"}},
			map[string]string{"b": "cancelled/dependency a failed", "c": "pending", "d": "waiting"}},
		{"fan-in: the optional fails, the required succeeds",
			[]spec{{name: "a", optional: true}, {name: "b"}, {name: "c", deps: "a,b"}},
			[]step{{"a", "failed"}, {"b", "succeeded"}},
			map[string]string{"c": "pending"}},
		{"fan-in: the optional fails and waits for the required",
			[]spec{{name: "a", optional: true}, {name: "b"}, {name: "c", deps: "a,b"}},
			[]step{{"a", "failed"}},
			map[string]string{"c": "waiting"}},
		{"fan-in: the required fails after the optional did",
			[]spec{{name: "a", optional: true}, {name: "b"}, {name: "c", deps: "a,b"}},
			[]step{{"a", "failed"}, {"b", "failed"}},
			map[string]string{"c": "cancelled/dependency b failed"}},
		{"fan-in: the required fails first",
			[]spec{{name: "a", optional: true}, {name: "b"}, {name: "c", deps: "b,a"}},
			[]step{{"b", "cancelled"}},
			map[string]string{"c": "cancelled/dependency b cancelled", "a": "pending"}},
		{"when=failed runs after a failure, once all ended",
			[]spec{{name: "a"}, {name: "b"}, {name: "w", deps: "a,b", whenFailed: true}, {name: "n", deps: "a"}},
			[]step{{"a", "failed"}},
			map[string]string{"w": "waiting", "n": "cancelled/dependency a failed"}},
		{"when=failed released when the last dependency succeeds",
			[]spec{{name: "a"}, {name: "b"}, {name: "w", deps: "a,b", whenFailed: true}},
			[]step{{"a", "failed"}, {"b", "succeeded"}},
			map[string]string{"w": "pending"}},
		{"when=failed runs after a cancelled dependency",
			[]spec{{name: "a"}, {name: "w", deps: "a", whenFailed: true}},
			[]step{{"a", "cancelled"}},
			map[string]string{"w": "pending"}},
		{"when=failed counts an optional failure",
			[]spec{{name: "a", optional: true}, {name: "b"}, {name: "w", deps: "a,b", whenFailed: true}, {name: "n", deps: "a,b"}},
			[]step{{"a", "failed"}, {"b", "succeeded"}},
			map[string]string{"w": "pending", "n": "pending"}},
		{"when=failed skipped when all succeeded; its dependents cancelled",
			[]spec{{name: "a"}, {name: "b"}, {name: "w", deps: "a,b", whenFailed: true}, {name: "d", deps: "w"}},
			[]step{{"a", "succeeded"}, {"b", "succeeded"}},
			map[string]string{"w": "cancelled/skipped", "d": "cancelled/dependency w cancelled"}},
		{"an optional when=failed skipped releases its dependents",
			[]spec{{name: "a"}, {name: "w", deps: "a", whenFailed: true, optional: true}, {name: "d", deps: "w"}},
			[]step{{"a", "succeeded"}},
			map[string]string{"w": "cancelled/skipped", "d": "pending"}},
		{"a when=failed chain: the handler of the handler",
			[]spec{{name: "a"}, {name: "w", deps: "a", whenFailed: true}, {name: "v", deps: "w", whenFailed: true}},
			[]step{{"a", "succeeded"}},
			map[string]string{"w": "cancelled/skipped", "v": "pending"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			cl := h.client()
			ids := map[string]uint64{}
			for _, tk := range tc.tasks {
				kv := []string{"task_type", tk.name}
				if tk.deps != "" {
					var deps []string
					for _, d := range strings.Split(tk.deps, ",") {
						deps = append(deps, itoa(ids[d]))
					}
					kv = append(kv, "depends_on", strings.Join(deps, ","))
				}
				if tk.optional {
					kv = append(kv, "optional", "true")
				}
				if tk.whenFailed {
					kv = append(kv, "when", "failed")
				}
				ids[tk.name] = h.submit(cl, kv...)
			}
			for _, s := range tc.ends {
				ex := h.executor("e-"+s.dep, s.dep, 1)
				h.endAs(cl, ex, ids[s.dep], s.status)
			}
			for name, want := range tc.want {
				for n, id := range ids { // error texts name tasks by id
					want = strings.ReplaceAll(want, "dependency "+n+" ", "dependency "+itoa(id)+" ")
				}
				st, errText, _ := strings.Cut(want, "/")
				tk := h.get(ids[name])
				assert.Equal(t, st, tk.state.String(), "task %s", name)
				assert.Equal(t, errText, tk.errText(), "task %s", name)
			}
			h.checkReplay()
			require.NoError(t, checkInvariants(h.c, map[string]int{}))
			h.restart()
			for name, want := range tc.want {
				st, _, _ := strings.Cut(want, "/")
				assert.Equal(t, st, h.state(ids[name]).String(), "task %s after a restart", name)
			}
		})
	}
}

// Dependencies already ended when the task is submitted take the same
// rules: an optional failure lets it go, a when=failed task runs or is
// skipped at once.
func TestSteps_SubmitAfterDependenciesEnded(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	ex := h.executor("e1", "x", 1)
	opt := h.submit(cl, "task_type", "x", "optional", "true")
	req := h.submit(cl, "task_type", "x")
	ok := h.submit(cl, "task_type", "x")
	h.endAs(cl, ex, opt, "failed")
	h.endAs(cl, ex, req, "failed")
	h.endAs(cl, ex, ok, "succeeded")

	assert.Equal(t, Pending, h.state(h.submit(cl, "task_type", "y", "depends_on", itoa(opt))))
	assert.Equal(t, Pending, h.state(h.submit(cl, "task_type", "y", "depends_on", itoa(opt)+","+itoa(ok))))
	c := h.submit(cl, "task_type", "y", "depends_on", itoa(opt)+","+itoa(req))
	assert.Equal(t, Cancelled, h.state(c))
	assert.Equal(t, "dependency "+itoa(req)+" failed", h.get(c).errText(), "the required one is named")

	w := h.submit(cl, "task_type", "y", "depends_on", itoa(ok)+","+itoa(req), "when", "failed")
	assert.Equal(t, Pending, h.state(w))
	w = h.submit(cl, "task_type", "y", "depends_on", itoa(ok)+","+itoa(opt), "when", "failed")
	assert.Equal(t, Pending, h.state(w), "an optional failure counts")
	s := h.submit(cl, "task_type", "y", "depends_on", itoa(ok), "when", "failed")
	assert.Equal(t, Cancelled, h.state(s))
	assert.Equal(t, "skipped", h.get(s).errText())
	h.checkReplay()
	require.NoError(t, checkInvariants(h.c, map[string]int{}))
}

func TestSteps_SubmitRules(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	a := h.submit(cl, "task_type", "x")
	for _, kv := range [][]string{
		{"optional", "yes"},
		{"when", "failed"}, // no depends_on
		{"when", "failed", "depends_on", ""},
		{"when", "succeeded", "depends_on", itoa(a)},
		{"when", "Failed", "depends_on", itoa(a)},
	} {
		h.send(cl, "submit", append([]string{"req", "s", "task_type", "x"}, kv...)...)
		e := h.expectErr(cl, wire.CodeBadRequest)
		assert.Contains(t, e.Value("message"), kv[0], "%v", kv)
	}
	assert.Equal(t, 1, h.c.tasks.count, "nothing made")

	// Shown by query and TaskInfo when set; optional=false is not set.
	o := h.submit(cl, "task_type", "x", "optional", "true")
	f := h.submit(cl, "task_type", "x", "optional", "false")
	w := h.submit(cl, "task_type", "x", "depends_on", itoa(a), "when", "failed", "optional", "true")
	q := h.query(cl, o)
	assert.Equal(t, "true", q.Value("optional"))
	assert.False(t, q.Has("when"))
	assert.False(t, h.query(cl, f).Has("optional"), "false is the default, not shown")
	q = h.query(cl, w)
	assert.Equal(t, "failed", q.Value("when"))
	assert.Equal(t, "true", q.Value("optional"))
	ti, _ := h.c.Task(w)
	assert.Equal(t, "true", ti.Optional)
	assert.Equal(t, "failed", ti.When)
	var keys []string
	for k := range ti.Fields() {
		keys = append(keys, k)
	}
	assert.Equal(t, []string{"optional", "when"}, keys)

	// Durable: from the log, and from a snapshot.
	snap := snapshotEntries(t, h.c)
	h.restart()
	assert.Equal(t, "failed", h.query(h.client(), w).Value("when"))
	h.restartFrom(snap, len(h.fx.records))
	assert.Equal(t, "true", h.query(h.client(), w).Value("optional"))
}

// The two fields count toward the bytes tasks hold, as every field of the
// table does.
func TestSteps_FieldsCountInBytes(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	a := h.submit(cl, "task_type", "x")
	before := h.c.pendingBytes
	plain := h.submit(cl, "task_type", "x", "depends_on", itoa(a))
	grew := h.c.pendingBytes - before
	h.submit(cl, "task_type", "x", "depends_on", itoa(a), "when", "failed", "optional", "true")
	assert.Equal(t, grew+int64(len("failed")+len("true")), h.c.pendingBytes-before-grew)
	assert.Equal(t, Waiting, h.state(plain))
}

// Requeue and the two keys: a failed optional dependency does not block
// a dependent's requeue; a skipped when=failed task is not requeued to be
// skipped again; one that ran after a failure is.
func TestSteps_Requeue(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	ex := h.executor("e1", "x", 1)
	ey := h.executor("e2", "y", 1)
	a := h.submit(cl, "task_type", "x", "optional", "true")
	b := h.submit(cl, "task_type", "y", "depends_on", itoa(a))
	h.endAs(cl, ex, a, "failed")
	h.endAs(cl, ey, b, "failed")
	m := h.requeue(cl, b)
	require.Equal(t, "requeued", m.Type(), "%s", m)
	assert.Equal(t, "pending", m.Value("state"))

	ok := h.submit(cl, "task_type", "x")
	h.endAs(cl, ex, ok, "succeeded")
	skipped := h.submit(cl, "task_type", "y", "depends_on", itoa(ok), "when", "failed")
	require.Equal(t, Cancelled, h.state(skipped))
	m = h.requeue(cl, skipped)
	assert.Equal(t, string(wire.CodeIllegalTransition), m.Value("code"))
	assert.Contains(t, m.Value("message"), "skipped again")

	bad := h.submit(cl, "task_type", "x")
	w := h.submit(cl, "task_type", "y", "depends_on", itoa(bad)+","+itoa(ok), "when", "failed")
	h.endAs(cl, ex, bad, "failed")
	h.endAs(cl, ey, b, "succeeded") // the requeued b first
	h.endAs(cl, ey, w, "failed")
	m = h.requeue(cl, w)
	require.Equal(t, "requeued", m.Type(), "%s", m)
	assert.Equal(t, "pending", m.Value("state"), "its dependency still failed")
	// Its failed dependency requeued too: it waits for it again, and is
	// skipped once it succeeds.
	h.endAs(cl, ey, w, "failed")
	require.Equal(t, "requeued", h.requeue(cl, bad).Type())
	m = h.requeue(cl, w)
	require.Equal(t, "requeued", m.Type(), "%s", m)
	assert.Equal(t, "waiting", m.Value("state"))
	h.endAs(cl, ex, bad, "succeeded")
	assert.Equal(t, Cancelled, h.state(w))
	assert.Equal(t, "skipped", h.get(w).errText())
	h.checkReplay()
	require.NoError(t, checkInvariants(h.c, map[string]int{}))
}

// A dependency a waiting task went past, requeued, is waited for again:
// the task is listed as its dependent once more, short list or long.
func TestSteps_RequeuedDependencyIsWaitedForAgain(t *testing.T) {
	for _, n := range []int{2, 3 * shortDeps} {
		t.Run("others "+itoa(n), func(t *testing.T) {
			h := newHarness(t)
			cl := h.client()
			ex := h.executor("e1", "x", 1)
			a := h.submit(cl, "task_type", "x", "optional", "true")
			var others []uint64
			for range n {
				others = append(others, h.submit(cl, "task_type", "slow"))
			}
			list := itoa(a) + "," + joinIDs(others)
			b := h.submit(cl, "task_type", "y", "depends_on", list)
			w := h.submit(cl, "task_type", "y", "depends_on", list, "when", "failed")
			h.endAs(cl, ex, a, "failed")
			es := h.executor("e2", "slow", 1)
			h.endAs(cl, es, others[0], "succeeded") // the long scans move past a
			require.Equal(t, Waiting, h.state(b))
			require.True(t, h.get(a).flags&flagTolerated != 0)

			h.c.Closed(ex) // a stays pending once requeued
			require.Equal(t, "requeued", h.requeue(cl, a).Type())
			assert.Zero(t, h.get(a).flags&flagTolerated)
			assert.Zero(t, h.get(w).flags&flagDepFailed, "the failure it saw is undone")
			require.NoError(t, checkInvariants(h.c, map[string]int{}))
			h.checkReplay()
			for _, id := range others[1:] {
				h.endAs(cl, es, id, "succeeded")
			}
			assert.Equal(t, Waiting, h.state(b), "it waits for a again")
			assert.Equal(t, Waiting, h.state(w))
			snap := snapshotEntries(t, h.c)
			h.restartFrom(snap, len(h.fx.records))
			ex = h.executor("e3", "x", 1)
			h.endAs(h.client(), ex, a, "succeeded")
			assert.Equal(t, Pending, h.state(b))
			assert.Equal(t, Cancelled, h.state(w), "every dependency succeeded in the end")
			assert.Equal(t, "skipped", h.get(w).errText())
			h.checkReplay()
		})
	}
}

// A when=failed task remembers a failed dependency that retention forgot
// while it still waited for another.
func TestSteps_WhenFailedForgottenDependency(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	ex := h.executor("e1", "x", 1)
	a := h.submit(cl, "task_type", "x")
	b := h.submit(cl, "task_type", "slow")
	w := h.submit(cl, "task_type", "y", "depends_on", itoa(a)+","+itoa(b), "when", "failed")
	h.endAs(cl, ex, a, "failed")
	h.send(cl, "purge_where", "req", "p", "task_type", "x")
	require.Equal(t, "1", h.expect(cl, "matched").Value("count"))
	require.Nil(t, h.c.tasks.get(a), "forgotten")
	h.restart() // the flag is durable
	cl = h.client()
	es := h.executor("e2", "slow", 1)
	h.endAs(cl, es, b, "succeeded")
	assert.Equal(t, Pending, h.state(w))
	h.checkReplay()
}

// After a crash that kept a dependency's end but lost what followed it,
// recovery releases, cancels or skips the waiting tasks by the same rules.
func TestSteps_RecoverySettles(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	ex := h.executor("e1", "x", 1)
	opt := h.submit(cl, "task_type", "x", "optional", "true")
	ok := h.submit(cl, "task_type", "x")
	afterOpt := h.submit(cl, "task_type", "y", "depends_on", itoa(opt))
	onFail := h.submit(cl, "task_type", "y", "depends_on", itoa(opt), "when", "failed")
	onOK := h.submit(cl, "task_type", "y", "depends_on", itoa(ok), "when", "failed")
	h.endAs(cl, ex, opt, "failed")
	h.endAs(cl, ex, ok, "succeeded")
	cut := endRecordOf(t, h.fx.records, ok)
	kept := slices.DeleteFunc(slices.Clone(h.fx.records[:cut+1]), func(p []byte) bool {
		var r record
		require.NoError(t, decodeRecord(p, &r))
		return r.kind == recReady
	})
	c, err := New(h.cfg, newRecorder())
	require.NoError(t, err)
	for i, p := range kept {
		require.NoError(t, c.ReplayRecord(p), "record %d", i)
	}
	require.Equal(t, Waiting, c.tasks.get(afterOpt).state, "the crash lost the release")
	require.Equal(t, Waiting, c.tasks.get(onOK).state, "the crash lost the skip")
	c.Recovered()
	assert.Equal(t, Pending, c.tasks.get(afterOpt).state)
	assert.Equal(t, Pending, c.tasks.get(onFail).state)
	assert.Equal(t, Cancelled, c.tasks.get(onOK).state)
	assert.Equal(t, "skipped", c.tasks.get(onOK).errText())
}
