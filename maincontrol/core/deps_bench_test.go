package core

import (
	"runtime"
	"strconv"
	"testing"
	"time"
)

// manyDeps is the length of the depends_on lists below: about the most a
// 1 MiB frame holds of six-digit ids (h11-exhaustion, item 8).
const manyDeps = 100_000

// depsList renders the ids first to first+n-1 as a depends_on value.
func depsList(first uint64, n int) string {
	b := make([]byte, 0, 7*n)
	for i := range uint64(n) {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendUint(b, first+i, 10)
	}
	return string(b)
}

// heapLive is the heap in use after a collection.
func heapLive() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkCore_SubmitManyDeps measures a submit whose depends_on names
// manyDeps pending tasks: the CPU of that one frame (the event loop
// serves nobody else meanwhile) and the heap each such waiting task keeps.
//   - shared: every submit names the same pending tasks, as a client
//     looping over one list would (each dependency gains a dependent);
//   - fresh: every submit names pending tasks nobody waits for yet (each
//     dependency gets its first dependent, the fan-in of a pipeline).
//
// Submits are logged (records encoded), as with a data dir. Run with a
// fixed count, -benchtime 20x, so that runs compare; cpu-ns/op (the
// process's CPU, collector included) swings less than ns/op on a loaded
// machine.
func BenchmarkCore_SubmitManyDeps(b *testing.B) {
	b.Run("shared", func(b *testing.B) {
		c, _ := benchCore(b, &ManualClock{T: time.UnixMilli(1_700_000_000_000)},
			func(cfg *Config) { cfg.MaxPendingBytes = -1 })
		fillPending(b, c, manyDeps)
		submit := msg("submit", "req", "r", "task_type", "y", "depends_on", depsList(1, manyDeps))
		const cl = PeerID(1)
		c.Handle(cl, submit) // the dependents lists exist: measure what one more costs
		before := heapLive()
		b.ReportAllocs()
		b.ResetTimer()
		cpu0 := cpuTime()
		for range b.N {
			c.Handle(cl, submit)
		}
		cpu := cpuTime() - cpu0
		b.StopTimer()
		retained := heapLive() - before
		if c.counts[Waiting] != b.N+1 {
			b.Fatalf("%d waiting, want %d", c.counts[Waiting], b.N+1)
		}
		b.ReportMetric(float64(retained)/float64(b.N), "retained-B/task")
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
		runtime.KeepAlive(c)
	})
	b.Run("fresh", func(b *testing.B) {
		c, _ := benchCore(b, &ManualClock{T: time.UnixMilli(1_700_000_000_000)},
			func(cfg *Config) { cfg.MaxPendingBytes, cfg.MaxPending = -1, 1<<30 })
		const cl = PeerID(1)
		c.Open(cl)
		c.Handle(cl, msg("hello"))
		fill := msg("submit", "req", "r", "task_type", "x")
		b.ReportAllocs()
		var retained uint64
		var cpu time.Duration
		for range b.N {
			b.StopTimer()
			first := c.nextID
			for range manyDeps {
				c.Handle(cl, fill)
			}
			submit := msg("submit", "req", "r", "task_type", "y", "depends_on", depsList(first, manyDeps))
			before := heapLive()
			b.StartTimer()
			cpu0 := cpuTime()
			c.Handle(cl, submit)
			cpu += cpuTime() - cpu0
			b.StopTimer()
			retained += heapLive() - before
			runtime.KeepAlive(submit) // its 600 KB were there before: not a saving
			b.StartTimer()
		}
		if c.counts[Waiting] != b.N {
			b.Fatalf("%d waiting, want %d", c.counts[Waiting], b.N)
		}
		b.ReportMetric(float64(retained)/float64(b.N), "retained-B/task")
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
	})
}
