package bench_test

import (
	"context"
	"runtime/pprof"
	"testing"
	"time"

	"github.com/apollo11/apollo11/bench"
	"github.com/apollo11/apollo11/maincontrol"
	"github.com/apollo11/apollo11/snapshot"
)

// BenchmarkMainControl_Echo runs the headline load (4 producers, 8 raw
// executors, echo tasks with wait=true, persistence off) against a main
// control in this process, one task per b.N. Its goroutines carry the
// pprof label side=maincontrol and the harness's side=harness, so a CPU
// profile splits cleanly:
//
//	go test ./bench -run '^$' -bench MainControl_Echo -benchtime 300000x -cpuprofile cpu.out
//	go tool pprof -tagfocus side=maincontrol -top cpu.out
//
// The fsync-never case keeps a log and snapshots in a temp dir, to show
// what persistence costs. The one-at-a-time case is the durable regime of
// bench/peers: 8 executors x 1 slot, windows of 64, 100-byte payloads,
// wait=false, fsync always.
func BenchmarkMainControl_Echo(b *testing.B) {
	headline := bench.Config{Wait: true}
	b.Run("memory", func(b *testing.B) { benchEcho(b, headline, func(*maincontrol.Config) {}) })
	b.Run("fsync-never", func(b *testing.B) {
		dir := b.TempDir()
		benchEcho(b, headline, func(c *maincontrol.Config) { c.DataDir, c.Fsync = dir, snapshot.FsyncNever })
	})
	b.Run("one-at-a-time-always", func(b *testing.B) {
		dir := b.TempDir()
		load := bench.Config{Executors: 8, Slots: 1, Producers: 4, Window: 64, Payload: 100}
		benchEcho(b, load, func(c *maincontrol.Config) { c.DataDir, c.Fsync = dir, snapshot.FsyncAlways })
	})
}

func benchEcho(b *testing.B, load bench.Config, mutate func(*maincontrol.Config)) {
	var addr string
	pprof.Do(context.Background(), pprof.Labels("side", "maincontrol"), func(context.Context) {
		addr = startMainControl(b, mutate)
	})
	b.ResetTimer()
	var rep *bench.Report
	var err error
	pprof.Do(context.Background(), pprof.Labels("side", "harness"), func(ctx context.Context) {
		load.Addr, load.Tasks, load.Drain = addr, int64(b.N), time.Minute
		rep, err = bench.Run(ctx, load)
	})
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(rep.Throughput, "tasks/s")
	b.ReportMetric(rep.SubmitToDone.P99, "p99-done-ms")
	b.ReportMetric(rep.Harness.CPUSeconds/float64(b.N)*1e9, "harness-cpu-ns/task")
}
