package reliability_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apollo11/apollo11/client"
	"github.com/apollo11/apollo11/wire"
)

// TestExecutor_StaleResultsRefused plays a frozen executor by hand, to
// see every result_ack: executor A takes tasks and falls silent past the
// heartbeat timeout (as if stopped); the main control declares it lost;
// executor B gets the tasks again. A then comes back, registers again and
// sends its results for the old dispatches, and also for B's: every one
// is refused with reason=stale. B's results are accepted, once each.
func TestExecutor_StaleResultsRefused(t *testing.T) {
	sc := currentScale()
	n := sc.staleTasks
	fig := figures.add(4, "late results of a frozen executor (raw wire)", "stale results")
	mc := startMain(t, t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := client.Dial(ctx, mc.Addr, client.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()

	a, _, err := dialExecutor(mc.Addr, "frozen-a", "st", n, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer a.close()
	for i := 0; i < n; i++ {
		s, err := cl.Submit(ctx, client.SubmitRequest{Type: "st", MaxAttempts: 5})
		if err != nil {
			t.Fatal(err)
		}
		fig.tasks++
		fig.confirmed++
		_ = s
	}
	old := takeTasks(t, a, n) // started, then silence: no heartbeat, no result
	frozeAt := time.Now()
	if _, err := a.waitClosed(10 * time.Second); err != nil {
		t.Fatalf("the main control did not drop the silent executor: %v", err)
	}
	fig.injected += 2 * n
	t.Logf("closed after %v", time.Since(frozeAt))

	b, _, err := dialExecutor(mc.Addr, "live-b", "st", n, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.close()
	current := takeTasks(t, b, n) // dispatched again after the retry delay
	fig.recovered(time.Since(frozeAt))
	t.Logf("redispatched after %v", time.Since(frozeAt))
	stopHB := heartbeat(b, current)
	defer stopHB()

	a, _, err = dialExecutor(mc.Addr, "frozen-a", "st", n, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer a.close()
	for id, ver := range old {
		_ = a.write("started", "task_id", id, "version", ver)
		_ = a.write("result", "task_id", id, "version", ver, "status", "succeeded", "out.who", "a")
		_ = a.write("result", "task_id", id, "version", current[id], "status", "succeeded", "out.who", "a")
	}
	if err := a.flush(); err != nil {
		t.Fatal(err)
	}
	for got := 0; got < 2*n; {
		m, err := a.recv(10 * time.Second)
		if err != nil {
			t.Fatalf("after %d acks: %v", got, err)
		}
		if m.Type() == "cancel" || m.Type() == "pong" {
			continue
		}
		got++
		if m.Type() != "result_ack" || m.Value("accepted") != "false" || m.Value("reason") != "stale" {
			t.Errorf("late result answered %s, want result_ack accepted=false reason=stale", m)
		}
	}
	t.Logf("acks after %v", time.Since(frozeAt))
	fig.probed(probe(t, mc.Addr, nil, true))

	stopHB()
	for id, ver := range current {
		if err := b.write("result", "task_id", id, "version", ver, "status", "succeeded", "out.who", "b"); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.flush(); err != nil {
		t.Fatal(err)
	}
	for got := 0; got < n; {
		m, err := b.recv(10 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if m.Type() != "result_ack" {
			continue
		}
		got++
		if m.Value("accepted") != "true" {
			t.Errorf("current result refused: %s", m)
		}
	}
	for id := range current {
		tid, _ := wire.ParseUint(id)
		ts, err := cl.Query(ctx, tid)
		if err != nil || ts.State != "succeeded" || ts.Out["who"] != "b" {
			fig.lost++
			t.Errorf("task %s: %+v %v, want succeeded by b", id, ts, err)
		}
	}
}

// takeTasks reads n task frames, answers each with started, and returns
// task_id -> version.
func takeTasks(t testing.TB, p *peer, n int) map[string]string {
	t.Helper()
	got := map[string]string{}
	for len(got) < n {
		m, err := p.recv(15 * time.Second)
		if err != nil {
			t.Fatalf("after %d tasks: %v", len(got), err)
		}
		if m.Type() != "task" {
			continue
		}
		got[m.Value("task_id")] = m.Value("version")
		if err := p.send("started", "task_id", m.Value("task_id"), "version", m.Value("version")); err != nil {
			t.Fatal(err)
		}
	}
	return got
}

// heartbeat sends p's heartbeats, listing running, until the returned
// function is called. The peer's frames are not read meanwhile.
func heartbeat(p *peer, running map[string]string) func() {
	list := make([]string, 0, len(running))
	for id, ver := range running {
		list = append(list, id+"."+ver)
	}
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		tk := time.NewTicker(300 * time.Millisecond)
		defer tk.Stop()
		for seq := 1; ; seq++ {
			select {
			case <-done:
				return
			case <-tk.C:
				_ = p.send("heartbeat", "seq", strconv.Itoa(seq), "running", strings.Join(list, ","))
			}
		}
	}()
	var once bool
	return func() {
		if !once {
			once = true
			close(done)
			<-stopped
		}
	}
}
