package reliability_test

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/internal/testbin"
)

// TestMaincontrol_Kill9WithRuns kills the main control with SIGKILL while
// pipeline runs are submitted, cancelled and advanced beside a load of
// tasks, and while it snapshots every 2 records, so that kills land in
// the middle of snapshots that write runs parts. After every restart
// every confirmed run is there with its key and step tasks, at least as
// far as was confirmed (a confirmed cancel, accepted step results, the
// state found after an earlier restart), no run id or task id is given
// twice and no key has two runs; at the end every run runs to its end.
func TestMaincontrol_Kill9WithRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("kill rounds take a while")
	}
	sc := currentScale()
	fig := figures.add(17, "kill -9 of the main control while pipeline runs start and advance, a snapshot every 2 records", "rounds")
	dir := t.TempDir()
	// Soak confirms more runs than the default cap keeps, which would
	// forget the oldest ended ones. Unpaced snapshots follow each other
	// with no rest, so that kills land in them.
	flags := []string{"--snapshot-every", "2", "--snapshot-duty", "1", "--retention-max", "100000000", "--max-runs", "1000000"}
	l := newLedger()
	rl := newRunLedger(l)
	rng := rand.New(rand.NewPCG(17, uint64(sc.runKillRounds)))
	var killedAt time.Time
	halfWritten, runsHalfWritten := 0, 0
	var mc *testbin.Proc
	for round := 0; ; round++ {
		mc = startMain(t, dir, flags...)
		waitProbe(t, mc.Addr, nil, 30*time.Second)
		if !killedAt.IsZero() {
			fig.recovered(time.Since(killedAt))
		}
		fig.lost += l.verify(t, mc.Addr, nil, false)
		fig.lost += rl.verify(t, mc.Addr, false)
		if t.Failed() {
			t.FailNow()
		}
		if round == sc.runKillRounds {
			break
		}
		killedAt = loadRunsAndKill(t, mc, l, rl, round, rng.Uint64(), time.Duration(500+rng.IntN(2000))*time.Millisecond)
		fig.injected++
		if snapshotHalfWritten(t, dir) {
			halfWritten++
		}
		if runsPartHalfWritten(t, dir) {
			runsHalfWritten++
		}
	}
	// Runs keep going after the kills: a draining executor ends them all.
	stop := startDrain(t, mc.Addr, l)
	rl.waitRunsEnded(t, mc.Addr, 2*time.Minute)
	l.waitEnded(t, mc.Addr, nil, 2*time.Minute)
	stop()
	fig.lost += rl.verify(t, mc.Addr, true)
	fig.lost += l.verify(t, mc.Addr, nil, true)
	mc.Kill()
	tally(fig, l)
	sent, confirmed, cancels, late := rl.counts()
	require.NotZero(t, confirmed)
	fig.note("%d runs sent, %d confirmed (%d found durable when resent with their key), %d cancels confirmed (%d more runs cancelled by a cancel a kill left unconfirmed); every run ran to its end",
		sent, confirmed, late, cancels, rl.lateCancels())
	fig.note("%d of %d kills left a snapshot half written, %d of them a runs part", halfWritten, fig.injected, runsHalfWritten)
}

// loadRunsAndKill runs one round of load on mc: keyed runs one at a time
// (some cancelled), pipelined keyed task submits with cancels, and a raw
// executor that advances both. It kills mc with SIGKILL wait after the
// round's first confirmed run and returns when the load has stopped.
func loadRunsAndKill(t testing.TB, mc *testbin.Proc, l *ledger, rl *runLedger, round int, seed uint64, wait time.Duration) time.Time {
	t.Helper()
	_, before, _, _ := rl.counts()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(3)
	go func() { defer wg.Done(); produce(ctx, mc.Addr, l, round, 5*time.Millisecond) }()
	go func() { defer wg.Done(); produceRuns(ctx, mc.Addr, rl, round, seed) }()
	go func() { defer wg.Done(); runExecutor(ctx, mc.Addr, "ex-"+itoa(uint64(round)), l, seed, true) }()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if _, n, _, _ := rl.counts(); n > before {
			break
		}
	}
	time.Sleep(wait)
	mc.Kill() // SIGKILL
	killedAt := time.Now()
	cancel()
	wg.Wait()
	if _, n, _, _ := rl.counts(); n <= before {
		t.Errorf("round %d: no run was confirmed", round)
	}
	return killedAt
}

// startDrain runs a raw executor that takes every task at once, until
// stop (or the test's end).
func startDrain(t testing.TB, addr string, l *ledger) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); runExecutor(ctx, addr, "drain", l, 0, false) }()
	stop = func() { cancel(); <-done }
	t.Cleanup(stop)
	return stop
}

// runsPartHalfWritten reports whether dir holds a runs part newer than
// every manifest: a kill cut a snapshot short after it wrote runs.
func runsPartHalfWritten(t testing.TB, dir string) bool {
	t.Helper()
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	newest := ""
	var runs []string
	for _, e := range ents {
		if m := manifestName.FindStringSubmatch(e.Name()); m != nil {
			newest = max(newest, m[1])
		}
		if m := partName.FindStringSubmatch(e.Name()); m != nil && m[2] == "runs" {
			runs = append(runs, m[1])
		}
	}
	for _, lsn := range runs {
		if lsn > newest {
			return true
		}
	}
	return false
}

// TestMaincontrol_RunsPartCorruption stops the main control with SIGKILL
// after several snapshots that wrote runs parts, flips bytes in one runs
// part, and restarts it: a runs part only the newest manifest uses falls
// back to the previous snapshot with no confirmed run lost, and the runs
// go on; a runs part every loadable manifest uses stops startup with an
// error naming the part.
func TestMaincontrol_RunsPartCorruption(t *testing.T) {
	if testing.Short() {
		t.Skip("kill rounds take a while")
	}
	fig := figures.add(18, "corrupt runs part, then restart", "corruptions")
	flags := []string{"--snapshot-every", "20", "--retention-max", "100000000"}
	for i, kind := range []string{"runs part only the newest uses", "runs part every manifest uses"} {
		t.Run(kind, func(t *testing.T) {
			shared := kind == "runs part every manifest uses"
			dir := t.TempDir()
			l := newLedger()
			rl := newRunLedger(l)
			if shared {
				// No executor serves the steps: once submitting stops, no
				// run changes and later snapshots keep the runs parts.
				rl.stepType = "idle"
			}
			mc := startMain(t, dir, flags...)
			waitProbe(t, mc.Addr, nil, 30*time.Second)
			loadRunsAndKill(t, mc, l, rl, 0, uint64(i), 1500*time.Millisecond)
			mc = startMain(t, dir, flags...)
			waitProbe(t, mc.Addr, nil, 30*time.Second)
			if shared {
				loadAndKill(t, mc, l, 1, uint64(i)+100, 600*time.Millisecond)
			} else {
				loadRunsAndKill(t, mc, l, rl, 1, uint64(i)+100, 300*time.Millisecond)
			}

			newest, prev := newestManifests(t, dir)
			target := firstPart(newest, func(p string) bool { return strings.HasSuffix(p, "-runs") && hasPart(prev, p) == shared })
			require.NotEmpty(t, target, "no %s among %+v and %+v", kind, newest.Parts, prev.Parts)
			flipBytes(t, filepath.Join(dir, target))
			fig.injected++

			if shared {
				bin := testbin.Build(t)
				p := testbin.Start(t, bin, nil, "maincontrol", "--listen", testbin.FreeAddr(t), "--data-dir", dir, "--log-level", "warn")
				_ = p.Wait(time.Minute)
				require.True(t, p.Exited(), "the main control runs on a lost runs part:\n%s", p.Output())
				require.NotZero(t, p.ExitCode(), "the main control started on a lost runs part:\n%s", p.Output())
				require.Contains(t, p.Output(), target)
				tally(fig, l)
				fig.note("a corrupt runs part every manifest uses stopped startup: %s", lastLine(p.Output()))
				return
			}
			mc = startMain(t, dir, flags...)
			waitProbe(t, mc.Addr, nil, 30*time.Second)
			require.Contains(t, mc.Output(), target, "no warning names the corrupt file")
			fig.lost += l.verify(t, mc.Addr, nil, false)
			fig.lost += rl.verify(t, mc.Addr, false)
			// It keeps serving on the fallback: run ids go on, runs advance.
			loadRunsAndKill(t, mc, l, rl, 2, uint64(i)+200, 300*time.Millisecond)
			mc = startMain(t, dir, flags...)
			waitProbe(t, mc.Addr, nil, 30*time.Second)
			fig.lost += l.verify(t, mc.Addr, nil, false)
			fig.lost += rl.verify(t, mc.Addr, false)
			stop := startDrain(t, mc.Addr, l)
			rl.waitRunsEnded(t, mc.Addr, 2*time.Minute)
			stop()
			fig.lost += rl.verify(t, mc.Addr, true)
			mc.Kill()
			tally(fig, l)
			_, confirmed, _, _ := rl.counts()
			fig.note("the runs part only the newest manifest used fell back with %d confirmed runs kept, all run to their end", confirmed)
		})
	}
}
