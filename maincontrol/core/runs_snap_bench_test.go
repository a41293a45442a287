package core

import (
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/apollo11/apollo11/snapshot"
)

// storeFx logs the core's records into a store and drops its frames.
type storeFx struct{ st *snapshot.Store }

func (f storeFx) Record(p []byte) uint64        { return f.st.Append(p) }
func (storeFx) Send(PeerID, []byte, Wait)       {}
func (storeFx) SendTask(PeerID, []byte, uint64) {}
func (storeFx) Close(PeerID)                    {}

// runDriver submits runs of two steps and runs their tasks to success
// through the core's messages, as a client and an executor would.
type runDriver struct {
	c      *Core
	cl, ex PeerID
	done   uint64 // every task below it has ended
	n      int
}

func newRunDriver(c *Core) *runDriver {
	d := &runDriver{c: c, cl: 1, ex: 2, done: 1}
	c.Open(d.cl)
	c.Handle(d.cl, msg("hello", "req", "h"))
	c.Open(d.ex)
	c.Handle(d.ex, msg("register", "executor_id", "e1", "task_types", "fetch,use", "slots", "65536"))
	return d
}

// submit sends one run_submit of a small pipeline.
func (d *runDriver) submit() {
	d.n++
	n := strconv.Itoa(d.n)
	d.c.Handle(d.cl, msg("run_submit", "req", "r", "name", "nightly", "key", "nightly-"+n, "steps", "2",
		"step.0.id", "fetch", "step.0.type", "fetch", "step.0.arg.url", "https://example.com/data/"+n,
		"step.1.id", "use", "step.1.type", "use", "step.1.depends_on", "fetch", "step.1.arg.path", "${steps.fetch.out.path}"))
}

// finish runs every dispatched task to success until none is left.
func (d *runDriver) finish(tb testing.TB) {
	for {
		moved := false
		for id := d.done; id < d.c.nextID; id++ {
			t := d.c.tasks.get(id)
			if t == nil || t.state != Dispatched {
				continue
			}
			ver := strconv.FormatUint(t.version, 10)
			d.c.Handle(d.ex, msg("started", "task_id", strconv.FormatUint(id, 10), "version", ver))
			d.c.Handle(d.ex, msg("result", "task_id", strconv.FormatUint(id, 10), "version", ver,
				"status", "succeeded", "out.path", "/data/"+strconv.FormatUint(id, 10)))
			moved = true
		}
		for d.done < d.c.nextID {
			if t := d.c.tasks.get(d.done); t != nil && !t.state.Terminal() {
				break
			}
			d.done++
		}
		if !moved {
			break
		}
	}
	if d.done != d.c.nextID {
		tb.Fatalf("task %d did not end: %v", d.done, d.c.tasks.get(d.done).state)
	}
}

// BenchmarkCore_SnapshotRuns reports the bytes an incremental snapshot
// writes after a few run changes while many runs are kept: 10,000 ended
// runs of a two-step pipeline (and their 20,000 tasks), then per op 4 new
// runs submitted and run to their end, then a snapshot.
func BenchmarkCore_SnapshotRuns(b *testing.B) {
	const kept, perOp = 10_000, 4
	dir := b.TempDir()
	st, err := snapshot.Open(snapshot.Options{Dir: dir, Fsync: snapshot.FsyncNever, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := st.Replay(nil, nil); err != nil {
		b.Fatal(err)
	}
	st.Start(nil, nil)
	defer st.Close()
	c, err := New(Config{Clock: &ManualClock{T: time.UnixMilli(1_700_000_000_000)}, Logger: slog.New(slog.DiscardHandler),
		MaxRuns: 2 * kept, Nonce: func() string { return "0123456789abcdef0123456789abcdef" }}, storeFx{st})
	if err != nil {
		b.Fatal(err)
	}
	d := newRunDriver(c)
	for range kept {
		d.submit()
	}
	d.finish(b)
	var prev *Snapshot
	var base uint64
	snap := func() uint64 {
		c.Tick()
		c.Durable(st.LastLSN())
		s := c.Freeze()
		lsn := st.LastLSN()
		before := st.Stats().SnapshotWritten
		if err := st.WriteIncremental(lsn, s.Since(prev, base)); err != nil {
			b.Fatal(err)
		}
		prev, base = s, lsn
		return st.Stats().SnapshotWritten - before
	}
	snap()
	if got := len(c.runs.byID); got != kept {
		b.Fatalf("%d runs kept, want %d", got, kept)
	}
	var total uint64
	b.ResetTimer()
	for range b.N {
		for range perOp {
			d.submit()
		}
		d.finish(b)
		total += snap()
	}
	b.ReportMetric(float64(total)/float64(b.N), "snapshot-bytes/op")
	b.ReportMetric(float64(len(c.runs.byID)), "runs")
}
