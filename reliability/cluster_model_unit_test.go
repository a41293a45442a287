package reliability_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

func histOf(ops ...porcupine.Operation) []porcupine.Operation { return ops }

// TestClusterModel_Histories runs the model over hand-written histories:
// the ones a correct cluster may give pass, and the ones that break a
// promise (a lost confirmed submit, two accepted results, ...) must be
// rejected, so that the check can fail.
func TestClusterModel_Histories(t *testing.T) {
	cases := []struct {
		name string
		ok   bool
		ops  []porcupine.Operation
	}{
		{"submit, query, result, query", true, histOf(
			hop(0, 0, 10, subOp("a"), madeOut(1)),
			hop(0, 11, 20, queryOp("a", 1), stateOut("pending")),
			hop(1, 21, 30, resultOp("a", 1), ackOut(true)),
			hop(0, 31, 40, queryOp("a", 1), stateOut("succeeded")),
		)},
		{"a resubmit of a confirmed key returns its task", true, histOf(
			hop(0, 0, 10, subOp("a"), madeOut(1)),
			hop(1, 11, 20, subOp("a"), dupOut(1)),
		)},
		{"a submit whose reply was lost, then resent: duplicate", true, histOf(
			hop(0, 0, -1, subOp("a"), lostOut),
			hop(0, 20, 30, subOp("a"), dupOut(7)),
			hop(0, 31, 40, queryOp("a", 7), stateOut("dispatched")),
		)},
		{"a submit whose reply was lost and that never took effect", true, histOf(
			hop(0, 0, -1, subOp("a"), lostOut),
			hop(0, 20, 30, subOp("a"), madeOut(7)),
		)},
		{"a stale result is refused, the current one accepted", true, histOf(
			hop(0, 0, 10, subOp("a"), madeOut(1)),
			hop(1, 11, 20, resultOp("a", 1), ackOut(false)),
			hop(2, 15, 25, resultOp("a", 1), ackOut(true)),
			hop(1, 26, 30, resultOp("a", 1), ackOut(false)),
		)},
		{"a result whose ack was lost shows in a later query", true, histOf(
			hop(0, 0, 10, subOp("a"), madeOut(1)),
			hop(1, 11, -1, resultOp("a", 1), lostOut),
			hop(0, 20, 30, queryOp("a", 1), stateOut("running")),
			hop(0, 40, 50, queryOp("a", 1), stateOut("succeeded")),
		)},
		{"a result sent while its submit's reply is still on the way", true, histOf(
			hop(0, 0, 30, subOp("a"), madeOut(1)),
			hop(1, 10, 20, resultOp("a", 1), ackOut(true)),
		)},
		{"keys are independent", true, histOf(
			hop(0, 0, 10, subOp("a"), madeOut(1)),
			hop(1, 0, 10, subOp("b"), madeOut(2)),
			hop(2, 11, 20, resultOp("b", 2), ackOut(true)),
			hop(0, 21, 30, queryOp("a", 1), stateOut("pending")),
		)},

		{"REJECT a confirmed submit lost: its task is unknown later", false, histOf(
			hop(0, 0, 10, subOp("a"), madeOut(1)),
			hop(0, 20, 30, queryOp("a", 1), stateOut("unknown_task")),
		)},
		{"REJECT a confirmed submit lost: its key makes a new task", false, histOf(
			hop(0, 0, 10, subOp("a"), madeOut(1)),
			hop(1, 20, 30, subOp("a"), madeOut(2)),
		)},
		{"REJECT a confirmed key answered with another task", false, histOf(
			hop(0, 0, 10, subOp("a"), madeOut(1)),
			hop(1, 20, 30, subOp("a"), dupOut(2)),
		)},
		{"REJECT two accepted results, one after the other", false, histOf(
			hop(0, 0, 10, subOp("a"), madeOut(1)),
			hop(1, 11, 20, resultOp("a", 1), ackOut(true)),
			hop(2, 21, 30, resultOp("a", 1), ackOut(true)),
		)},
		{"REJECT two accepted results at once", false, histOf(
			hop(0, 0, 10, subOp("a"), madeOut(1)),
			hop(1, 11, 20, resultOp("a", 1), ackOut(true)),
			hop(2, 12, 19, resultOp("a", 1), ackOut(true)),
		)},
		{"REJECT an accepted result that does not stay", false, histOf(
			hop(0, 0, 10, subOp("a"), madeOut(1)),
			hop(1, 11, 20, resultOp("a", 1), ackOut(true)),
			hop(0, 21, 30, queryOp("a", 1), stateOut("pending")),
		)},
		{"REJECT a task succeeded before any result", false, histOf(
			hop(0, 0, 10, subOp("a"), madeOut(1)),
			hop(0, 11, 20, queryOp("a", 1), stateOut("succeeded")),
			hop(1, 21, 30, resultOp("a", 1), ackOut(true)),
		)},
		{"REJECT a result accepted for a task failed before", false, histOf(
			hop(0, 0, 10, subOp("a"), madeOut(1)),
			hop(0, 11, 20, queryOp("a", 1), stateOut("failed")),
			hop(1, 21, 30, resultOp("a", 1), ackOut(true)),
		)},
		{"REJECT a result for a task never submitted", false, histOf(
			hop(1, 0, 10, resultOp("a", 1), ackOut(true)),
		)},
		{"REJECT a fresh key answered duplicate", false, histOf(
			hop(0, 0, 10, subOp("a"), dupOut(1)),
		)},
		{"REJECT a lost submit cannot explain a new task after a duplicate", false, histOf(
			hop(0, 0, -1, subOp("a"), lostOut),
			hop(0, 20, 30, subOp("a"), dupOut(7)),
			hop(0, 40, 50, subOp("a"), madeOut(8)),
		)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := porcupine.CheckOperationsTimeout(taskModel, tc.ops, 10*time.Second)
			want := porcupine.Illegal
			if tc.ok {
				want = porcupine.Ok
			}
			if got != want {
				t.Errorf("check = %s, want %s", got, want)
			}
		})
	}
}

// TestClusterModel_CheckReportsAViolation runs the suite's own check on
// a history with two accepted results: it must fail the test it runs in.
func TestClusterModel_CheckReportsAViolation(t *testing.T) {
	rec := &recorder{TB: t}
	got := checkLinearizable(rec, histOf(
		hop(0, 0, 10, subOp("a"), madeOut(1)),
		hop(1, 11, 20, resultOp("a", 1), ackOut(true)),
		hop(2, 21, 30, resultOp("a", 1), ackOut(true)),
	), 10*time.Second, t.TempDir())
	if got != porcupine.Illegal || len(rec.errors) != 1 || !strings.Contains(rec.errors[0], "not linearizable") {
		t.Errorf("check = %s, errors %q; want Illegal and one error", got, rec.errors)
	}
}

// recorder is a testing.TB that keeps its errors instead of failing.
type recorder struct {
	testing.TB
	errors []string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

// TestClusterLedger_Counts checks the ledger's three counts on
// hand-written histories and final states.
func TestClusterLedger_Counts(t *testing.T) {
	good := histOf(
		hop(0, 0, 10, subOp("a"), madeOut(1)),
		hop(0, 0, 10, subOp("b"), madeOut(2)),
		hop(0, 0, -1, subOp("c"), lostOut),
		hop(1, 11, 20, resultOp("a", 1), ackOut(true)),
		hop(1, 11, 20, resultOp("a", 1), ackOut(false)),
		hop(1, 11, -1, resultOp("b", 2), lostOut),
	)
	c := checkLedger(good, map[uint64]string{1: "succeeded", 2: "running"})
	if c.lost != 0 || c.doubled != 0 || c.reused != 0 || c.confirmed != 2 || c.accepted != 1 {
		t.Errorf("a correct history: %+v", c)
	}

	cases := []struct {
		name                 string
		ops                  []porcupine.Operation
		final                map[uint64]string
		lost, doubled, reuse int
	}{
		{"a confirmed submit gone", histOf(hop(0, 0, 10, subOp("a"), madeOut(1)), hop(0, 0, 10, subOp("b"), madeOut(2))),
			map[uint64]string{2: "pending"}, 1, 0, 0},
		{"an accepted result gone", histOf(hop(0, 0, 10, subOp("a"), madeOut(1)), hop(1, 11, 20, resultOp("a", 1), ackOut(true))),
			map[uint64]string{1: "pending"}, 1, 0, 0},
		{"two accepted results", histOf(hop(0, 0, 10, subOp("a"), madeOut(1)), hop(1, 11, 20, resultOp("a", 1), ackOut(true)),
			hop(2, 21, 30, resultOp("a", 1), ackOut(true))), map[uint64]string{1: "succeeded"}, 0, 1, 0},
		{"an id given to two keys", histOf(hop(0, 0, 10, subOp("a"), madeOut(1)), hop(0, 11, 20, subOp("b"), madeOut(1))),
			map[uint64]string{1: "pending"}, 0, 0, 1},
		{"a key given two ids", histOf(hop(0, 0, 10, subOp("a"), madeOut(1)), hop(0, 11, 20, subOp("a"), madeOut(2))),
			map[uint64]string{1: "pending", 2: "pending"}, 1, 0, 0},
	}
	for _, tc := range cases {
		c := checkLedger(tc.ops, tc.final)
		if c.lost != tc.lost || c.doubled != tc.doubled || c.reused != tc.reuse || len(c.problems) == 0 {
			t.Errorf("%s: lost %d doubled %d reused %d (problems %q); want %d %d %d",
				tc.name, c.lost, c.doubled, c.reused, c.problems, tc.lost, tc.doubled, tc.reuse)
		}
	}
}
