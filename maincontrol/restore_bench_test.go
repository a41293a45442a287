package maincontrol_test

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
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
func newRestoreCore(fx core.Effects) (*core.Core, error) {
	return core.New(core.Config{Clock: core.SystemClock{}, Rand: rand.New(rand.NewPCG(1, 2)),
		Logger: slog.New(slog.DiscardHandler), MaxPending: 10_000_000, MaxPendingBytes: -1}, fx)
}

func restoreBenchCore(tb testing.TB, fx core.Effects) *core.Core {
	tb.Helper()
	c, err := newRestoreCore(fx)
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

// restoreChildEnv names the data dir a child process of BenchmarkRestore
// restores, and restoreTasksEnv the pending tasks it must find.
const (
	restoreChildEnv = "APOLLO11_RESTORE_CHILD_DIR"
	restoreTasksEnv = "APOLLO11_RESTORE_CHILD_TASKS"
)

// restoreChild is the child process of BenchmarkRestore: it restores the
// dir its environment names, as a main control starting does. It says
// whether it was one.
func restoreChild() bool {
	dir := os.Getenv(restoreChildEnv)
	if dir == "" {
		return false
	}
	want, err := strconv.Atoi(os.Getenv(restoreTasksEnv))
	if err == nil {
		err = restoreOnce(dir, want)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	return true
}

func restoreOnce(dir string, want int) error {
	st, err := snapshot.Open(snapshot.Options{Dir: dir, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return err
	}
	c, err := newRestoreCore(logEffects{st})
	if err != nil {
		return err
	}
	if _, err := maincontrol.Restore(st, c, maincontrol.RestoreOptions{Serve: true}); err != nil {
		return err
	}
	if got := c.Counts()[core.Pending]; got != want {
		return fmt.Errorf("%d pending after the restore, want %d", got, want)
	}
	return st.Close()
}

// BenchmarkRestore times a main control's recovery of a data dir with a
// snapshot of N pending tasks (100-byte args) and N/10 submits in the
// log after it: Open, Restore as the server runs it, and Close. Each run
// is a new process, as a restart is: it faults in every page of the
// state it builds, which on a VM is much of its CPU. The pages of the
// dir are warm after the first run. Each run adds its epoch record to the
// log. The times include the start of the process (a few ms).
func BenchmarkRestore(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		b.Run(fmt.Sprintf("tasks=%d", n), func(b *testing.B) {
			dir := b.TempDir()
			fillRestoreDir(b, dir, n, n/10)
			var cpu time.Duration
			var faults int64
			for b.Loop() {
				cmd := exec.Command(os.Args[0], "-test.run=^$")
				cmd.Env = append(os.Environ(), restoreChildEnv+"="+dir, restoreTasksEnv+"="+strconv.Itoa(n+n/10))
				if out, err := cmd.CombinedOutput(); err != nil {
					b.Fatalf("restore: %v: %s", err, out)
				}
				ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
				cpu += time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
				faults += int64(ru.Minflt)
			}
			// CPU of every goroutine, the collector's too, and the page
			// faults: on a shared machine they say more than the wall time.
			b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
			b.ReportMetric(float64(faults)/float64(b.N), "faults/op")
		})
	}
}
