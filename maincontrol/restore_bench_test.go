package maincontrol_test

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apollo11/apollo11/maincontrol"
	"github.com/apollo11/apollo11/maincontrol/core"
	"github.com/apollo11/apollo11/snapshot"
	"github.com/apollo11/apollo11/wire"
)

// logEffects feeds the core's records to a store, as the server's gate
// does, and drops its frames: the data dir is all a restart reads.
type logEffects struct{ st *snapshot.Store }

func (e logEffects) Record(p []byte) uint64             { return e.st.Append(p) }
func (logEffects) Send(core.PeerID, []byte, core.Wait)  {}
func (logEffects) SendTask(core.PeerID, []byte, uint64) {}
func (logEffects) Close(core.PeerID)                    {}
func restoreBenchCore(tb testing.TB, fx core.Effects) *core.Core {
	tb.Helper()
	c, err := core.New(core.Config{Clock: core.SystemClock{}, Rand: rand.New(rand.NewPCG(1, 2)),
		Logger: slog.New(slog.DiscardHandler), MaxPending: 10_000_000, MaxPendingBytes: -1}, fx)
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// fillRestoreDir writes the data dir a restart of tasks pending tasks
// reads: tasks submits of 100-byte args in an incremental snapshot, then
// records more submits in the log only, as after a kill -9.
func fillRestoreDir(tb testing.TB, dir string, tasks, records int) {
	tb.Helper()
	opts := snapshot.Options{Dir: dir, Fsync: snapshot.FsyncNever, Logger: slog.New(slog.DiscardHandler)}
	st, err := snapshot.Open(opts)
	if err != nil {
		tb.Fatal(err)
	}
	c := restoreBenchCore(tb, logEffects{st})
	if _, err := maincontrol.Restore(st, c, maincontrol.RestoreOptions{Serve: true}); err != nil {
		tb.Fatal(err)
	}
	st.Start(func(uint64) {}, func(error) {})
	const peer = core.PeerID(1)
	c.Open(peer)
	c.Handle(peer, wire.NewMessage("hello"))
	payload := strings.Repeat("p", 100)
	sent := 0
	submit := func() {
		sent++
		m := wire.NewMessage(wire.KindSubmit)
		m.Set("req", "r")
		m.Set("task_type", "nobody")
		m.Set("arg.t", strconv.Itoa(sent))
		m.Set("arg.p", payload)
		c.Handle(peer, m)
	}
	// Two snapshots, as a running main control writes them: the second
	// lets the log before the first go.
	var prev *core.Snapshot
	var prevLSN uint64
	for _, n := range []int{tasks - 1, 1} {
		for range n {
			submit()
		}
		snap := c.Freeze()
		lsn := st.LastLSN()
		if err := st.WaitDurable(context.Background(), lsn); err != nil {
			tb.Fatal(err)
		}
		if err := st.WriteIncremental(lsn, snap.Since(prev, prevLSN)); err != nil {
			tb.Fatal(err)
		}
		prev, prevLSN = snap, lsn
	}
	if got := prev.Tasks(); got != tasks {
		tb.Fatalf("snapshot holds %d tasks, want %d", got, tasks)
	}
	for range records {
		submit()
	}
	if err := st.Close(); err != nil {
		tb.Fatal(err)
	}
}

// cpuTime is the CPU time the process has used so far.
func cpuTime(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkRestore times a main control's recovery of a data dir with a
// snapshot of N pending tasks (100-byte args) and N/10 submits in the
// log after it: Open, Restore as the server runs it, and Close. The
// pages are warm after the first run. Each run also adds its epoch
// record to the log.
func BenchmarkRestore(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		b.Run(fmt.Sprintf("tasks=%d", n), func(b *testing.B) {
			dir := b.TempDir()
			fillRestoreDir(b, dir, n, n/10)
			opts := snapshot.Options{Dir: dir, Logger: slog.New(slog.DiscardHandler)}
			cpu0 := cpuTime(b)
			for b.Loop() {
				st, err := snapshot.Open(opts)
				if err != nil {
					b.Fatal(err)
				}
				c := restoreBenchCore(b, logEffects{st})
				if _, err := maincontrol.Restore(st, c, maincontrol.RestoreOptions{Serve: true}); err != nil {
					b.Fatal(err)
				}
				if got := c.Counts()[core.Pending]; got != n+n/10 {
					b.Fatalf("%d pending after the restore, want %d", got, n+n/10)
				}
				if err := st.Close(); err != nil {
					b.Fatal(err)
				}
			}
			// CPU of every goroutine, the collector's too: on a shared
			// machine it says more than the wall time.
			b.ReportMetric(float64(cpuTime(b)-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}
