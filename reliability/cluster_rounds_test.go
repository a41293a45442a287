//go:build linux

package reliability_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apollo11/apollo11/internal/testbin"
)

// clusterScale is the cluster group's counts in the current mode.
func clusterScale() (kills, partitions int) {
	switch {
	case *soak:
		return 50, 20
	case raceEnabled:
		return 2, 2
	default:
		return 3, 2
	}
}

// clusterLoad is the recording clients and executors of a test.
type clusterLoad struct {
	hist    *history
	counts  loadCounts
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	clients int // history ids in use
}

// startLoad runs clients recording clients and execs executors against
// addrs, until stop.
func startLoad(lab *netLab, addrs []string, clients, execs int) *clusterLoad {
	l := &clusterLoad{hist: newHistory()}
	ctx, cancel := context.WithCancel(context.Background())
	l.cancel = cancel
	for i := 0; i < clients; i++ {
		c := newClusterClient(lab, addrs, l.clients, l.hist)
		l.clients++
		l.wg.Add(1)
		go func(seed uint64) { defer l.wg.Done(); c.run(ctx, &l.counts, seed) }(uint64(i))
	}
	for i := 0; i < execs; i++ {
		e := &clusterExecutor{leaderFollower: leaderFollower{lab: lab, addrs: addrs, next: i % len(addrs)},
			name: "ex-" + itoa(uint64(i)), id: l.clients, hist: l.hist}
		l.clients++
		l.wg.Add(1)
		go func() { defer l.wg.Done(); e.run(ctx, &l.counts) }()
	}
	return l
}

func (l *clusterLoad) stop() {
	l.cancel()
	l.wg.Wait()
}

// verifyHistory queries every task the history names, through the
// leader (these queries join the history), then checks the history for
// linearizability and the ledger. It adds the counts to fig.
func verifyHistory(t *testing.T, lab *netLab, addrs []string, l *clusterLoad, fig *figure) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c := newClusterClient(lab, addrs, l.clients, l.hist)
	defer c.drop()
	keyOf := map[uint64]string{}
	for _, op := range l.hist.operations() {
		in, out := op.Input.(taskOp), op.Output.(taskOut)
		switch {
		case in.Kind == opSubmit && !out.Unknown:
			keyOf[out.ID] = in.Key
		case in.Kind == opResult:
			keyOf[in.ID] = in.Key
		}
	}
	final := map[uint64]string{}
	for id, key := range keyOf {
		var st string
		for st == "" && ctx.Err() == nil {
			st = c.query(ctx, key, id)
		}
		if st != "unknown_task" && st != "" {
			final[id] = st
		}
	}
	ops := l.hist.operations()
	unknown := 0
	for _, op := range ops {
		if op.Output.(taskOut).Unknown {
			unknown++
		}
	}
	start := time.Now()
	checkLinearizable(t, ops, 5*time.Minute, os.TempDir())
	t.Logf("linearizability of %d operations over %d keys checked in %v", len(ops), len(keyOf), time.Since(start))
	lc := checkLedger(ops, final)
	for _, p := range lc.problems {
		t.Error(p)
	}
	fig.tasks += int(l.counts.submits.Load())
	fig.confirmed += lc.confirmed
	fig.lost += lc.lost
	fig.duplicates += lc.doubled
	if lc.reused > 0 {
		t.Errorf("%d task ids were confirmed for two keys", lc.reused)
	}
	fig.note("%d operations checked linearizable (porcupine), %d of them with a lost reply: %d new keys submitted (%d first sends lost), %d queries, %d result acks (%d accepted); %d ids reused",
		len(ops), unknown, l.counts.submits.Load(), l.counts.unknown.Load(), l.counts.queries.Load(), l.counts.results.Load(), lc.accepted, lc.reused)
}

// TestLinearizable_SingleNodeKill9 runs the cluster group's recording
// peers against one main control in the lab, killed with SIGKILL and
// restarted on its data dir: the history of real clients and executors
// across a crash must check linearizable, with nothing confirmed lost.
// It proves the recording and the check on the single-node mode, which
// keeps every confirmed change across kill -9.
func TestLinearizable_SingleNodeKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("kill rounds take a while")
	}
	lab := newNetLab(t, 1)
	dir := t.TempDir()
	addr := memberIP(0) + ":7100"
	start := func() *testbin.Proc {
		p := lab.start(0, "maincontrol", "--listen", addr, "--data-dir", dir, "--log-level", "warn",
			"--heartbeat-timeout", "1500ms", "--heartbeat-interval", "500ms")
		if err := lab.waitWelcome(addr, p, 30*time.Second); err != nil {
			t.Fatal(err)
		}
		return p
	}
	fig := figures.add(16, "kill -9 of one main control, history checked linearizable (netns lab)", "kills")
	mc := start()
	l := startLoad(lab, []string{addr}, 3, 2)
	for i := 0; i < 2; i++ {
		waitOps(t, l, 200)
		mc.Kill()
		fig.injected++
		mc = start()
	}
	waitOps(t, l, 200)
	l.stop()
	verifyHistory(t, lab, []string{addr}, l, fig)
}

// waitOps waits until the load has made n more confirmed submits.
func waitOps(t *testing.T, l *clusterLoad, n int64) {
	t.Helper()
	want := l.counts.confirmed.Load() + n
	for deadline := time.Now().Add(60 * time.Second); l.counts.confirmed.Load() < want; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the load confirmed %d submits in 60 s, want %d", l.counts.confirmed.Load(), want)
		}
	}
}

// requireClusterMode skips unless the binary has cluster mode.
func requireClusterMode(t *testing.T) {
	t.Helper()
	out, _ := exec.Command(testbin.Build(t), "maincontrol", "--help").CombinedOutput()
	if !strings.Contains(string(out), "raft-listen") || !strings.Contains(string(out), "cluster-members") {
		t.Skip("cluster mode is not on main yet: `apollo11 maincontrol` has no --raft-listen / --cluster-members (helper raft)")
	}
}
