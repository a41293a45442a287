package reliability_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/apollo11/apollo11/client"
)

// runLedger is what the main control confirmed about pipeline runs, across
// every fault of one test. A confirmed run exists under its key and task
// ids; a confirmed cancel leaves it cancelled; a step whose result was
// accepted is succeeded; a run never goes back from an ended state seen
// after a restart; no run id serves two keys and no key two runs.
type runLedger struct {
	tasks       *ledger // the task ledger: accepted results, task ids
	stepType    string  // the type of every step
	mu          sync.Mutex
	sent        int // run submits sent with a new key
	keyRun      map[string]uint64
	runs        map[uint64]*runRecord
	unconfirmed []string // keys sent whose run_submitted never came
	lateDurable int      // unconfirmed runs found durable on resubmit
	cancels     int      // run cancels confirmed
	problems    []string
}

// runRecord is one confirmed run.
type runRecord struct {
	key       string
	tasks     []uint64 // step task ids, in step order
	cancelled bool     // a run_cancel of it was confirmed
	cancelTry bool     // a run_cancel of it was sent: a kill may leave it durable, unconfirmed
	seen      string   // its state at the last check after a restart
}

func newRunLedger(tasks *ledger) *runLedger {
	return &runLedger{tasks: tasks, stepType: "work", keyRun: map[string]uint64{}, runs: map[uint64]*runRecord{}}
}

func (rl *runLedger) problem(format string, args ...any) {
	rl.problems = append(rl.problems, fmt.Sprintf(format, args...))
}

// confirm records a run_submitted reply for key. Its step tasks join the
// task ledger as confirmed tasks, so that a task id given twice, to a
// submit and to a step, is caught too. It reports whether the reply was
// consistent with the ledger.
func (rl *runLedger) confirm(key string, s client.RunSubmitted) bool {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	if old, ok := rl.keyRun[key]; ok {
		if old != s.ID || !slices.Equal(rl.runs[old].tasks, s.TaskIDs) {
			rl.problem("run key %s confirmed as run %d %v, then as run %d %v", key, old, rl.runs[old].tasks, s.ID, s.TaskIDs)
			return false
		}
		return true
	}
	if r, ok := rl.runs[s.ID]; ok {
		rl.problem("run id %d reused: confirmed for key %s, then for the new key %s", s.ID, r.key, key)
		return false
	}
	if s.Duplicate {
		rl.lateDurable++
	}
	rl.keyRun[key] = s.ID
	rl.runs[s.ID] = &runRecord{key: key, tasks: s.TaskIDs, seen: client.RunRunning}
	l := rl.tasks
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, id := range s.TaskIDs {
		if l.submitted[id] {
			l.problem("task id %d reused: a step of the new run %d", id, s.ID)
		}
		l.submitted[id] = true
		l.maxID = max(l.maxID, id)
	}
	return true
}

// runRequest is the run every key stands for: three steps of type typ
// (the raw executor serves "work"), each reading its dependency's output,
// so that a restart must keep the outputs filled in too.
func runRequest(key, typ string) client.RunRequest {
	return client.RunRequest{Name: "killed", Key: key, Steps: []client.RunStepRequest{
		{ID: "a", Type: typ, Args: map[string]string{"key": key}},
		{ID: "b", Type: typ, DependsOn: []string{"a"}, Args: map[string]string{"in": "${steps.a.out.done}"}},
		{ID: "c", Type: typ, DependsOn: []string{"b"}, Args: map[string]string{"in": "${steps.b.out.done}"}},
	}}
}

// produceRuns submits keyed runs one at a time until ctx ends, and cancels
// some: the unconfirmed keys of the previous crash first, and a few
// confirmed ones again, which must come back with their run.
func produceRuns(ctx context.Context, addr string, rl *runLedger, round int, seed uint64) {
	c, err := client.Dial(ctx, addr, client.Options{Token: rl.tasks.token, Name: "runs", Logger: quiet})
	if err != nil {
		return
	}
	defer c.Close()
	rng := rand.New(rand.NewPCG(seed, 5))
	rl.mu.Lock()
	queue := rl.unconfirmed
	rl.unconfirmed = nil
	n := 0
	for key := range rl.keyRun { // map order: a random few
		if n++; n > 3 {
			break
		}
		queue = append(queue, key)
	}
	rl.mu.Unlock()
	for seq := 1; ctx.Err() == nil; seq++ {
		var key string
		if len(queue) > 0 {
			key, queue = queue[0], queue[1:]
		} else {
			key = "run" + strconv.Itoa(round) + "-" + strconv.Itoa(seq)
			rl.mu.Lock()
			rl.sent++
			rl.mu.Unlock()
			rl.tasks.mu.Lock()
			rl.tasks.sent += 3 // its steps, as tasks sent
			rl.tasks.mu.Unlock()
		}
		s, err := c.RunSubmit(ctx, runRequest(key, rl.stepType))
		if err != nil {
			rl.mu.Lock()
			if _, ok := rl.keyRun[key]; !ok {
				rl.unconfirmed = append(rl.unconfirmed, key)
			}
			rl.unconfirmed = append(rl.unconfirmed, queue...)
			rl.mu.Unlock()
			return
		}
		if !rl.confirm(key, s) || rng.IntN(6) != 0 {
			continue
		}
		rl.mu.Lock()
		rl.runs[s.ID].cancelTry = true
		rl.mu.Unlock()
		if _, err := c.RunCancel(ctx, s.ID); err == nil {
			rl.mu.Lock()
			rl.runs[s.ID].cancelled = true
			rl.cancels++
			rl.mu.Unlock()
		}
	}
}

// runEndedOK checks a run's state against what was confirmed of it and
// what a check after an earlier restart found: an ended run stays so.
func runEndedOK(rec *runRecord, allAccepted bool, state string) error {
	switch {
	case rec.cancelled && state != client.RunCancelled:
		return fmt.Errorf("cancel confirmed, but the run is %s", state)
	case !rec.cancelled && allAccepted && state != client.RunSucceeded:
		return fmt.Errorf("every step's result accepted, but the run is %s", state)
	case client.RunEnded(rec.seen) && state != rec.seen:
		return fmt.Errorf("was %s after an earlier restart, now %s", rec.seen, state)
	}
	return nil
}

// verify checks every confirmed run against the main control and returns
// the number lost or gone back; with ended, every run must also have
// ended (succeeded unless cancelled). It lists every run, so that a key
// with a second run, or a run id listed twice, is found.
func (rl *runLedger) verify(t testing.TB, addr string, ended bool) (lost int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := client.Dial(ctx, addr, client.Options{Token: rl.tasks.token, Logger: quiet})
	if err != nil {
		t.Fatalf("verify runs: %v", err)
	}
	defer c.Close()
	var listed []uint64
	for after := uint64(0); ; {
		ids, next, err := c.RunList(ctx, nil, 0, after)
		if err != nil {
			t.Fatalf("verify runs: run_list: %v", err)
		}
		listed = append(listed, ids...)
		if next == 0 {
			break
		}
		after = next
	}
	rl.tasks.mu.Lock()
	accepted := make(map[uint64]bool, len(rl.tasks.accepted))
	for id := range rl.tasks.accepted {
		accepted[id] = true
	}
	rl.tasks.mu.Unlock()
	rl.mu.Lock()
	defer rl.mu.Unlock()
	seen := map[uint64]bool{}
	for _, id := range listed {
		if seen[id] {
			t.Errorf("run %d listed twice", id)
		}
		seen[id] = true
		if _, ok := rl.runs[id]; ok {
			continue
		}
		// A run the test never saw confirmed: an unconfirmed submit that
		// became durable. Its key must have no other run.
		rs, err := c.RunQuery(ctx, client.RunRef{ID: id})
		if err != nil {
			t.Fatalf("verify runs: query run %d: %v", id, err)
		}
		if other, ok := rl.keyRun[rs.Key]; ok {
			t.Errorf("key %s has two runs: %d (confirmed) and %d", rs.Key, other, id)
		}
	}
	for id, rec := range rl.runs {
		rs, err := c.RunQuery(ctx, client.RunRef{ID: id})
		if client.IsCode(err, "unknown_run") {
			lost++
			t.Errorf("confirmed run %d (key %s) lost", id, rec.key)
			continue
		}
		if err != nil {
			t.Fatalf("verify runs: query run %d: %v", id, err)
		}
		if !seen[id] {
			t.Errorf("run %d is there but not listed", id)
		}
		var steps []uint64
		all := true
		for i, s := range rs.Steps {
			steps = append(steps, s.TaskID)
			if accepted[s.TaskID] && s.State != "succeeded" {
				lost++
				t.Errorf("run %d step %d: result accepted, but the step is %q", id, i, s.State)
			}
			all = all && accepted[s.TaskID]
		}
		if rs.Key != rec.key || !slices.Equal(steps, rec.tasks) {
			lost++
			t.Errorf("run %d: key %s, steps %v; confirmed as key %s, steps %v", id, rs.Key, steps, rec.key, rec.tasks)
			continue
		}
		if err := runEndedOK(rec, all, rs.State); err != nil {
			lost++
			t.Errorf("run %d: %v", id, err)
		}
		if ended && rs.State != client.RunSucceeded && !(rec.cancelTry && rs.State == client.RunCancelled) {
			lost++
			t.Errorf("run %d did not run to its end: %s", id, rs.State)
		}
		rec.seen = rs.State
	}
	for _, p := range rl.problems {
		t.Error(p)
	}
	return lost
}

// counts returns the runs sent with a new key, confirmed and cancelled.
func (rl *runLedger) counts() (sent, confirmed, cancelled, lateDurable int) {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	return rl.sent, len(rl.runs), rl.cancels, rl.lateDurable
}

// lateCancels returns the runs found cancelled by a cancel a kill left
// unconfirmed.
func (rl *runLedger) lateCancels() int {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	n := 0
	for _, r := range rl.runs {
		if r.cancelTry && !r.cancelled && r.seen == client.RunCancelled {
			n++
		}
	}
	return n
}

// waitRunsEnded waits until every confirmed run has ended.
func (rl *runLedger) waitRunsEnded(t testing.TB, addr string, timeout time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	c, err := client.Dial(ctx, addr, client.Options{Token: rl.tasks.token, Logger: quiet})
	if err != nil {
		t.Fatalf("wait runs: %v", err)
	}
	defer c.Close()
	rl.mu.Lock()
	ids := make([]uint64, 0, len(rl.runs))
	for id := range rl.runs {
		ids = append(ids, id)
	}
	rl.mu.Unlock()
	slices.Sort(ids)
	for _, id := range ids {
		for {
			rs, err := c.RunQuery(ctx, client.RunRef{ID: id})
			if err != nil {
				t.Fatalf("wait runs: run %d: %v", id, err)
			}
			if client.RunEnded(rs.State) {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}
