package reliability_test

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// lost marks a reply that never came.
var lost = taskOut{Unknown: true}

// hop builds an operation of client c over [call, ret]; ret < 0 means it
// never returned.
func hop(c int, call, ret int64, in taskOp, out taskOut) porcupine.Operation {
	if ret < 0 {
		ret = math.MaxInt64
	}
	return porcupine.Operation{ClientId: c, Input: in, Call: call, Output: out, Return: ret}
}

func sub(key string) taskOp                                   { return taskOp{Kind: opSubmit, Key: key} }
func qry(key string, id uint64) taskOp                        { return taskOp{Kind: opQuery, Key: key, ID: id} }
func res(key string, id uint64) taskOp                        { return taskOp{Kind: opResult, Key: key, ID: id} }
func made(id uint64) taskOut                                  { return taskOut{ID: id} }
func again(id uint64) taskOut                                 { return taskOut{ID: id, Duplicate: true} }
func state(s string) taskOut                                  { return taskOut{State: s} }
func ack(accepted bool) taskOut                               { return taskOut{Accepted: accepted} }
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
			hop(0, 0, 10, sub("a"), made(1)),
			hop(0, 11, 20, qry("a", 1), state("pending")),
			hop(1, 21, 30, res("a", 1), ack(true)),
			hop(0, 31, 40, qry("a", 1), state("succeeded")),
		)},
		{"a resubmit of a confirmed key returns its task", true, histOf(
			hop(0, 0, 10, sub("a"), made(1)),
			hop(1, 11, 20, sub("a"), again(1)),
		)},
		{"a submit whose reply was lost, then resent: duplicate", true, histOf(
			hop(0, 0, -1, sub("a"), lost),
			hop(0, 20, 30, sub("a"), again(7)),
			hop(0, 31, 40, qry("a", 7), state("dispatched")),
		)},
		{"a submit whose reply was lost and that never took effect", true, histOf(
			hop(0, 0, -1, sub("a"), lost),
			hop(0, 20, 30, sub("a"), made(7)),
		)},
		{"a stale result is refused, the current one accepted", true, histOf(
			hop(0, 0, 10, sub("a"), made(1)),
			hop(1, 11, 20, res("a", 1), ack(false)),
			hop(2, 15, 25, res("a", 1), ack(true)),
			hop(1, 26, 30, res("a", 1), ack(false)),
		)},
		{"a result whose ack was lost shows in a later query", true, histOf(
			hop(0, 0, 10, sub("a"), made(1)),
			hop(1, 11, -1, res("a", 1), lost),
			hop(0, 20, 30, qry("a", 1), state("running")),
			hop(0, 40, 50, qry("a", 1), state("succeeded")),
		)},
		{"a result sent while its submit's reply is still on the way", true, histOf(
			hop(0, 0, 30, sub("a"), made(1)),
			hop(1, 10, 20, res("a", 1), ack(true)),
		)},
		{"keys are independent", true, histOf(
			hop(0, 0, 10, sub("a"), made(1)),
			hop(1, 0, 10, sub("b"), made(2)),
			hop(2, 11, 20, res("b", 2), ack(true)),
			hop(0, 21, 30, qry("a", 1), state("pending")),
		)},

		{"REJECT a confirmed submit lost: its task is unknown later", false, histOf(
			hop(0, 0, 10, sub("a"), made(1)),
			hop(0, 20, 30, qry("a", 1), state("unknown_task")),
		)},
		{"REJECT a confirmed submit lost: its key makes a new task", false, histOf(
			hop(0, 0, 10, sub("a"), made(1)),
			hop(1, 20, 30, sub("a"), made(2)),
		)},
		{"REJECT a confirmed key answered with another task", false, histOf(
			hop(0, 0, 10, sub("a"), made(1)),
			hop(1, 20, 30, sub("a"), again(2)),
		)},
		{"REJECT two accepted results, one after the other", false, histOf(
			hop(0, 0, 10, sub("a"), made(1)),
			hop(1, 11, 20, res("a", 1), ack(true)),
			hop(2, 21, 30, res("a", 1), ack(true)),
		)},
		{"REJECT two accepted results at once", false, histOf(
			hop(0, 0, 10, sub("a"), made(1)),
			hop(1, 11, 20, res("a", 1), ack(true)),
			hop(2, 12, 19, res("a", 1), ack(true)),
		)},
		{"REJECT an accepted result that does not stay", false, histOf(
			hop(0, 0, 10, sub("a"), made(1)),
			hop(1, 11, 20, res("a", 1), ack(true)),
			hop(0, 21, 30, qry("a", 1), state("pending")),
		)},
		{"REJECT a task succeeded before any result", false, histOf(
			hop(0, 0, 10, sub("a"), made(1)),
			hop(0, 11, 20, qry("a", 1), state("succeeded")),
			hop(1, 21, 30, res("a", 1), ack(true)),
		)},
		{"REJECT a result accepted for a task failed before", false, histOf(
			hop(0, 0, 10, sub("a"), made(1)),
			hop(0, 11, 20, qry("a", 1), state("failed")),
			hop(1, 21, 30, res("a", 1), ack(true)),
		)},
		{"REJECT a result for a task never submitted", false, histOf(
			hop(1, 0, 10, res("a", 1), ack(true)),
		)},
		{"REJECT a fresh key answered duplicate", false, histOf(
			hop(0, 0, 10, sub("a"), again(1)),
		)},
		{"REJECT a lost submit cannot explain a new task after a duplicate", false, histOf(
			hop(0, 0, -1, sub("a"), lost),
			hop(0, 20, 30, sub("a"), again(7)),
			hop(0, 40, 50, sub("a"), made(8)),
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
		hop(0, 0, 10, sub("a"), made(1)),
		hop(1, 11, 20, res("a", 1), ack(true)),
		hop(2, 21, 30, res("a", 1), ack(true)),
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
		hop(0, 0, 10, sub("a"), made(1)),
		hop(0, 0, 10, sub("b"), made(2)),
		hop(0, 0, -1, sub("c"), lost),
		hop(1, 11, 20, res("a", 1), ack(true)),
		hop(1, 11, 20, res("a", 1), ack(false)),
		hop(1, 11, -1, res("b", 2), lost),
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
		{"a confirmed submit gone", histOf(hop(0, 0, 10, sub("a"), made(1)), hop(0, 0, 10, sub("b"), made(2))),
			map[uint64]string{2: "pending"}, 1, 0, 0},
		{"an accepted result gone", histOf(hop(0, 0, 10, sub("a"), made(1)), hop(1, 11, 20, res("a", 1), ack(true))),
			map[uint64]string{1: "pending"}, 1, 0, 0},
		{"two accepted results", histOf(hop(0, 0, 10, sub("a"), made(1)), hop(1, 11, 20, res("a", 1), ack(true)),
			hop(2, 21, 30, res("a", 1), ack(true))), map[uint64]string{1: "succeeded"}, 0, 1, 0},
		{"an id given to two keys", histOf(hop(0, 0, 10, sub("a"), made(1)), hop(0, 11, 20, sub("b"), made(1))),
			map[uint64]string{1: "pending"}, 0, 0, 1},
		{"a key given two ids", histOf(hop(0, 0, 10, sub("a"), made(1)), hop(0, 11, 20, sub("a"), made(2))),
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
