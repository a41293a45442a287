package reliability_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/apollo11/apollo11/client"
)

// ledger is what the main control confirmed to the test's peers, across
// every fault of one test. What it confirmed must survive: a confirmed
// submit exists, a task with an accepted result is succeeded, a confirmed
// cancel is cancelled, and no task has two accepted results.
type ledger struct {
	token       []byte // the shared token its peers sign with; nil: no auth
	limit       int    // submits to send at most; 0: no limit
	mu          sync.Mutex
	sent        int               // submits sent
	keyID       map[string]uint64 // idempotency key -> confirmed task id
	submitted   map[uint64]bool
	accepted    map[uint64]int // result_ack accepted=true per task
	cancelled   map[uint64]bool
	unconfirmed []string // keys sent whose submitted never came
	lateDurable int      // unconfirmed submits found durable on resubmit
	unavailable int      // submits refused with code=unavailable
	maxID       uint64
	versions    map[uint64]uint64 // highest version dispatched per task
	problems    []string
}

func newLedger() *ledger {
	return &ledger{keyID: map[string]uint64{}, submitted: map[uint64]bool{}, accepted: map[uint64]int{},
		cancelled: map[uint64]bool{}, versions: map[uint64]uint64{}}
}

func (l *ledger) problem(format string, args ...any) {
	l.problems = append(l.problems, fmt.Sprintf(format, args...))
}

// confirm records a submitted reply for key.
func (l *ledger) confirm(key string, id uint64, duplicate bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if old, ok := l.keyID[key]; ok && old != id {
		l.problem("key %s confirmed as task %d, then as task %d", key, old, id)
	}
	if _, known := l.keyID[key]; !known && l.submitted[id] {
		l.problem("task id %d reused: confirmed again for the new key %s", id, key)
	}
	if duplicate && l.keyID[key] == 0 {
		l.lateDurable++
	}
	l.keyID[key] = id
	l.submitted[id] = true
	l.maxID = max(l.maxID, id)
}

// dispatched records a task frame: a task's versions only ever grow, also
// across restarts, so a version seen before is a reused one.
func (l *ledger) dispatched(id, version uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if old := l.versions[id]; version <= old {
		l.problem("task %d dispatched with version %d after version %d", id, version, old)
	}
	l.versions[id] = max(l.versions[id], version)
}

func (l *ledger) accept(id uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.accepted[id]++
}

func (l *ledger) cancel(id uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.cancelled[id] = true
}

func (l *ledger) duplicates() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, c := range l.accepted {
		if c > 1 {
			n++
		}
	}
	return n
}

// taskStates returns the state of every task the main control knows, from
// `list` of each state (cheap for many tasks); tasks that moved between
// two lists are queried one by one.
func taskStates(t testing.TB, addr string, token []byte, want map[uint64]bool) map[uint64]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := client.Dial(ctx, addr, client.Options{Token: token, Logger: quiet})
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	defer c.Close()
	states := map[uint64]string{}
	for _, s := range []string{"waiting", "pending", "dispatched", "running", "retrying", "succeeded", "failed", "cancelled"} {
		ids, err := c.ListAll(ctx, s)
		if err != nil {
			t.Fatalf("verify: list %s: %v", s, err)
		}
		for _, id := range ids {
			states[id] = s
		}
	}
	for id := range want {
		if _, ok := states[id]; ok {
			continue
		}
		ts, err := c.Query(ctx, id)
		if client.IsCode(err, "unknown_task") {
			continue
		}
		if err != nil {
			t.Fatalf("verify: query %d: %v", id, err)
		}
		states[id] = ts.State
	}
	return states
}

// confirmedIDs returns the ids of the confirmed submits so far.
func (l *ledger) confirmedIDs() map[uint64]bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	want := make(map[uint64]bool, len(l.submitted))
	for id := range l.submitted {
		want[id] = true
	}
	return want
}

// account verifies the ledger against the main control and adds its
// counts to fig: confirmed submits lost, duplicated executions, tasks sent
// and confirmed.
func (l *ledger) account(t testing.TB, addr string, token []byte, fig *figure) {
	t.Helper()
	fig.lost += l.verify(t, addr, token, true)
	fig.duplicates += l.duplicates()
	l.mu.Lock()
	fig.tasks += l.sent
	fig.confirmed += len(l.submitted)
	l.mu.Unlock()
}

// verify checks every confirmed change against the main control's state
// and returns the number of confirmed submits lost or in a wrong state.
// With terminal, every confirmed task must also have ended.
func (l *ledger) verify(t testing.TB, addr string, token []byte, terminal bool) (lost int) {
	t.Helper()
	want := l.confirmedIDs()
	states := taskStates(t, addr, token, want)
	l.mu.Lock()
	defer l.mu.Unlock()
	for id := range want {
		st, ok := states[id]
		switch {
		case !ok:
			lost++
			t.Errorf("confirmed task %d lost", id)
		case l.accepted[id] > 0 && st != "succeeded":
			lost++
			t.Errorf("task %d: result accepted, but the task is %s", id, st)
		case l.cancelled[id] && st != "cancelled":
			lost++
			t.Errorf("task %d: cancel confirmed, but the task is %s", id, st)
		case terminal && st != "succeeded" && st != "failed" && st != "cancelled":
			lost++
			t.Errorf("task %d did not end: %s", id, st)
		}
	}
	for id, n := range l.accepted {
		if n > 1 {
			t.Errorf("task %d: %d accepted results", id, n)
		}
	}
	for _, p := range l.problems {
		t.Error(p)
	}
	return lost
}

// waitEnded waits until every confirmed task has ended.
func (l *ledger) waitEnded(t testing.TB, addr string, token []byte, timeout time.Duration) {
	t.Helper()
	want := l.confirmedIDs()
	deadline := time.Now().Add(timeout)
	for {
		left := 0
		for id, st := range taskStates(t, addr, token, want) {
			if want[id] && st != "succeeded" && st != "failed" && st != "cancelled" {
				left++
			}
		}
		if left == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d confirmed tasks still not ended after %v", left, timeout)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func itoa(n uint64) string { return strconv.FormatUint(n, 10) }
