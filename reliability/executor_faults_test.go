package reliability_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apollo11/apollo11/client"
	"github.com/apollo11/apollo11/internal/testbin"
)

// execCluster is a real main control, with frame logging on so that every
// accepted result can be counted from its log, and real executor
// processes running the built-in sleep handler.
type execCluster struct {
	t     *testing.T
	mc    *testbin.Proc
	cl    *client.Client
	execs map[string]*testbin.Proc
	tasks []uint64
}

func newExecCluster(t *testing.T, executors int) *execCluster {
	t.Helper()
	mc := startMain(t, t.TempDir(), "--log-level", "info", "--log-format", "json")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cl, err := client.Dial(ctx, mc.Addr, client.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	if err := cl.Debug(ctx, true); err != nil {
		t.Fatal(err)
	}
	c := &execCluster{t: t, mc: mc, cl: cl, execs: map[string]*testbin.Proc{}}
	for i := 0; i < executors; i++ {
		c.startExecutor("ex-" + strconv.Itoa(i))
	}
	c.waitExecutors(executors)
	return c
}

// startExecutor runs `apollo11 executor` with the sleep handler, 4 slots.
func (c *execCluster) startExecutor(id string) {
	c.execs[id] = testbin.Start(c.t, testbin.Build(c.t), nil, "executor", "--connect", c.mc.Addr, "--id", id,
		"--types", "sleep", "--slots", "4", "--log-level", "warn")
}

func (c *execCluster) waitExecutors(n int) {
	c.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for stats(c.t, c.mc.Addr, nil).Executors < uint64(n) {
		if time.Now().After(deadline) {
			c.t.Fatalf("fewer than %d executors registered\n%s", n, c.mc.Output())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// submit adds n sleep tasks of ms milliseconds each.
func (c *execCluster) submit(n, ms int) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i := 0; i < n; i++ {
		s, err := c.cl.Submit(ctx, client.SubmitRequest{Type: "sleep", Args: map[string]string{"ms": strconv.Itoa(ms)}, MaxAttempts: 50})
		if err != nil {
			c.t.Fatal(err)
		}
		c.tasks = append(c.tasks, s.ID)
	}
}

// dispatch is a task's current dispatch token.
type dispatch struct {
	id, version uint64
}

// heldBy returns the dispatches running (or dispatched) on each executor.
func (c *execCluster) heldBy() map[string][]dispatch {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	held := map[string][]dispatch{}
	for _, id := range c.tasks {
		ts, err := c.cl.Query(ctx, id)
		if err != nil {
			c.t.Fatal(err)
		}
		if ts.State == "running" || ts.State == "dispatched" {
			held[ts.ExecutorID] = append(held[ts.ExecutorID], dispatch{id, ts.Version})
		}
	}
	return held
}

// victim waits until some executor runs at least want tasks and returns
// it with its dispatches.
func (c *execCluster) victim(want int) (string, []dispatch) {
	c.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		for id, ds := range c.heldBy() {
			if len(ds) >= want && c.execs[id] != nil {
				return id, ds
			}
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("no executor holds %d tasks", want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// movedOn waits until none of ds is still the current dispatch of its
// task (it was taken back, dispatched again or ended) and returns how long
// that took.
func (c *execCluster) movedOn(ds []dispatch, timeout time.Duration) time.Duration {
	c.t.Helper()
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), timeout+10*time.Second)
	defer cancel()
	for _, d := range ds {
		for {
			ts, err := c.cl.Query(ctx, d.id)
			if err != nil {
				c.t.Fatal(err)
			}
			if ts.Version != d.version || ts.State == "succeeded" || ts.State == "failed" || ts.State == "cancelled" {
				break
			}
			if ts.State == "pending" || ts.State == "retrying" {
				break // taken back: dispatchable again
			}
			if time.Since(start) > timeout {
				c.t.Fatalf("task %d still %s on %s (version %d) %v after the fault", d.id, ts.State, ts.ExecutorID, ts.Version, timeout)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return time.Since(start)
}

// finish waits until every task ended, then checks that each succeeded
// with exactly one accepted result; it returns lost and duplicates.
func (c *execCluster) finish(fig *figure) {
	c.t.Helper()
	waitDrained(c.t, c.mc.Addr, nil, 60*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	accepted := c.acceptedLogged(5 * time.Second)
	for _, id := range c.tasks {
		ts, err := c.cl.Query(ctx, id)
		if err != nil || ts.State != "succeeded" {
			fig.lost++
			c.t.Errorf("task %d: %v %v", id, ts.State, err)
		}
		switch n := accepted[id]; {
		case n > 1:
			fig.duplicates++
			c.t.Errorf("task %d: %d accepted results", id, n)
		case n == 0:
			c.t.Errorf("task %d: no accepted result in the main control's log", id)
		}
	}
	fig.tasks += len(c.tasks)
	fig.confirmed += len(c.tasks)
}

// acceptedLogged counts the accepted results in the main control's log
// once every task has one there, or at the deadline. The log goes out
// through a buffer (internal/logsink), so its last lines may follow the
// tasks' ends by a moment: the count is taken again a little later, so
// that a late second accept is seen too. A log that dropped records
// cannot show exactly-once, so that fails the test.
func (c *execCluster) acceptedLogged(wait time.Duration) map[uint64]int {
	c.t.Helper()
	deadline := time.Now().Add(wait)
	var accepted map[uint64]int
	for {
		accepted = acceptedResults(parseLog(c.mc.Output()))
		missing := false
		for _, id := range c.tasks {
			if accepted[id] == 0 {
				missing = true
				break
			}
		}
		if !missing || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	out := c.mc.Output()
	if strings.Contains(out, "log records dropped") {
		c.t.Fatal("the main control's log dropped records: its accepted results cannot be counted")
	}
	return acceptedResults(parseLog(out))
}

// TestExecutor_Kill9 kills real executor processes with SIGKILL while
// they run tasks, and starts a replacement (under the same id every
// other round, so that both the heartbeat timeout and the re-register
// path take tasks back). Their tasks must move on within the heartbeat
// timeout and a retry delay, and every task must succeed with exactly one
// accepted result.
func TestExecutor_Kill9(t *testing.T) {
	if testing.Short() {
		t.Skip("executor processes take a while")
	}
	sc := currentScale()
	fig := figures.add(2, "kill -9 of an executor running tasks", "kills")
	c := newExecCluster(t, 3)
	for round := 0; round < sc.execKillRounds; round++ {
		c.submit(16, 1500)
		id, held := c.victim(2)
		c.execs[id].Kill()
		delete(c.execs, id)
		fig.injected++
		next := id
		if round%2 == 1 {
			next = fmt.Sprintf("ex-r%d", round)
		}
		c.startExecutor(next)
		fig.recovered(c.movedOn(held, 15*time.Second))
		fig.probed(probe(t, c.mc.Addr, nil, true))
	}
	c.finish(fig)
}

// TestExecutor_SIGSTOP stops a real executor process with SIGSTOP for
// longer than the heartbeat timeout while it runs tasks, then resumes it.
// Its tasks must move on while it is stopped; the results it sends after
// SIGCONT (for dispatches taken back) must be refused as stale; every
// task must succeed with exactly one accepted result.
func TestExecutor_SIGSTOP(t *testing.T) {
	if testing.Short() {
		t.Skip("executor processes take a while")
	}
	sc := currentScale()
	fig := figures.add(3, "SIGSTOP of an executor past the heartbeat timeout, then SIGCONT", "stops")
	c := newExecCluster(t, 3)
	var stopped []dispatch
	var stoppedIDs []string
	for round := 0; round < sc.stopRounds; round++ {
		c.submit(16, 1000)
		id, held := c.victim(2)
		p := c.execs[id]
		start := time.Now()
		p.Signal(syscall.SIGSTOP)
		fig.injected++
		fig.recovered(c.movedOn(held, 15*time.Second))
		fig.probed(probe(t, c.mc.Addr, nil, true))
		time.Sleep(time.Until(start.Add(2500 * time.Millisecond))) // past the 1.5 s timeout
		p.Signal(syscall.SIGCONT)
		stopped = append(stopped, held...)
		stoppedIDs = append(stoppedIDs, id)
	}
	c.finish(fig)
	// The resumed executors reconnect and send the results of the
	// dispatches taken from them: each is refused as stale.
	deadline := time.Now().Add(10 * time.Second)
	var stale int
	for {
		stale = 0
		late := map[dispatch]bool{}
		for _, r := range refusedResults(parseLog(c.mc.Output())) {
			late[dispatch{r.taskID, r.version}] = true
			if r.reason != "stale" {
				t.Errorf("late result of task %d refused as %s, not stale", r.taskID, r.reason)
			}
		}
		for _, d := range stopped {
			if late[d] {
				stale++
			}
		}
		if stale == len(stopped) || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if stale == 0 {
		t.Errorf("no late result of the stopped executors %v was seen refused", stoppedIDs)
	}
	fig.note("%d of the %d dispatches taken from stopped executors came back after SIGCONT, every one refused as stale", stale, len(stopped))
}
