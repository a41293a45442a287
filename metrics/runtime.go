package metrics

import (
	"bufio"
	"fmt"
	"runtime"
	"runtime/debug"
	rtmetrics "runtime/metrics"
	"strconv"
	"time"
)

// startTime stands for the process's start. Package init runs within
// moments of it, on every system.
var startTime = time.Now()

// RuntimeMetrics registers the Go runtime's and the process's metrics.
// They take the names the Prometheus Go client gives them (go_*,
// process_*). So dashboards and alerts written for it work unchanged.
// Scrapes read runtime/metrics and the GC's pause history, which stop
// nothing. runtime.ReadMemStats stops the world, so it is not used.
// Process metrics a system cannot give are left out, not written as zero.
func (r *Registry) RuntimeMetrics() {
	r.addBlock(func(w *bufio.Writer) {
		writeGo(w)
		writeProcess(w)
		family(w, "process_start_time_seconds", "Start time of the process since unix epoch in seconds.", "gauge",
			float64(startTime.UnixMicro())/1e6)
	})
}

// rtNames are the runtime/metrics samples go_memstats_* are made from,
// as the Prometheus Go client derives them without ReadMemStats.
var rtNames = []string{
	"/gc/heap/allocs:bytes",                       // 0
	"/gc/heap/allocs:objects",                     // 1
	"/gc/heap/frees:objects",                      // 2
	"/gc/heap/tiny/allocs:objects",                // 3
	"/memory/classes/total:bytes",                 // 4
	"/memory/classes/heap/objects:bytes",          // 5
	"/memory/classes/heap/unused:bytes",           // 6
	"/memory/classes/heap/released:bytes",         // 7
	"/memory/classes/heap/free:bytes",             // 8
	"/gc/heap/objects:objects",                    // 9
	"/memory/classes/heap/stacks:bytes",           // 10
	"/memory/classes/os-stacks:bytes",             // 11
	"/memory/classes/metadata/mspan/inuse:bytes",  // 12
	"/memory/classes/metadata/mspan/free:bytes",   // 13
	"/memory/classes/metadata/mcache/inuse:bytes", // 14
	"/memory/classes/metadata/mcache/free:bytes",  // 15
	"/memory/classes/profiling/buckets:bytes",     // 16
	"/memory/classes/metadata/other:bytes",        // 17
	"/memory/classes/other:bytes",                 // 18
	"/gc/heap/goal:bytes",                         // 19
}

// writeGo writes the go_* families.
func writeGo(w *bufio.Writer) {
	samples := make([]rtmetrics.Sample, len(rtNames))
	for i, n := range rtNames {
		samples[i].Name = n
	}
	rtmetrics.Read(samples)
	v := func(i int) float64 {
		if samples[i].Value.Kind() != rtmetrics.KindUint64 {
			return 0 // unknown to this runtime: the family still parses
		}
		return float64(samples[i].Value.Uint64())
	}
	var gc debug.GCStats
	gc.PauseQuantiles = make([]time.Duration, 5)
	debug.ReadGCStats(&gc)

	fmt.Fprintf(w, "# HELP go_gc_duration_seconds A summary of the wall-time pause (stop-the-world) duration in garbage collection cycles.\n# TYPE go_gc_duration_seconds summary\n")
	for i, q := range []string{"0", "0.25", "0.5", "0.75", "1"} {
		fmt.Fprintf(w, "go_gc_duration_seconds{quantile=%q} %s\n", q, format(gc.PauseQuantiles[i].Seconds()))
	}
	fmt.Fprintf(w, "go_gc_duration_seconds_sum %s\ngo_gc_duration_seconds_count %d\n", format(gc.PauseTotal.Seconds()), gc.NumGC)

	family(w, "go_goroutines", "Number of goroutines that currently exist.", "gauge", float64(runtime.NumGoroutine()))
	threads, _ := runtime.ThreadCreateProfile(nil)
	family(w, "go_threads", "Number of OS threads created.", "gauge", float64(threads))
	fmt.Fprintf(w, "# HELP go_info Information about the Go environment.\n# TYPE go_info gauge\ngo_info{version=%s} 1\n", strconv.Quote(runtime.Version()))

	heapAlloc := v(5)
	heapInuse := heapAlloc + v(6)
	heapIdle := v(7) + v(8)
	tiny := v(3)
	for _, m := range []struct {
		name, help, kind string
		val              float64
	}{
		{"alloc_bytes", "Number of bytes allocated in heap and currently in use.", "gauge", heapAlloc},
		{"alloc_bytes_total", "Total number of bytes allocated in heap until now, even if released already.", "counter", v(0)},
		{"sys_bytes", "Number of bytes obtained from system.", "gauge", v(4)},
		{"mallocs_total", "Total number of heap objects allocated, both live and gc-ed.", "counter", v(1) + tiny},
		{"frees_total", "Total number of heap objects frees.", "counter", v(2) + tiny},
		{"heap_alloc_bytes", "Number of heap bytes allocated and currently in use.", "gauge", heapAlloc},
		{"heap_sys_bytes", "Number of heap bytes obtained from system.", "gauge", heapInuse + heapIdle},
		{"heap_idle_bytes", "Number of heap bytes waiting to be used.", "gauge", heapIdle},
		{"heap_inuse_bytes", "Number of heap bytes that are in use.", "gauge", heapInuse},
		{"heap_released_bytes", "Number of heap bytes released to OS.", "gauge", v(7)},
		{"heap_objects", "Number of currently allocated objects.", "gauge", v(9)},
		{"stack_inuse_bytes", "Number of bytes obtained from system for stack allocator in non-CGO environments.", "gauge", v(10)},
		{"stack_sys_bytes", "Number of bytes obtained from system for stack allocator.", "gauge", v(10) + v(11)},
		{"mspan_inuse_bytes", "Number of bytes in use by mspan structures.", "gauge", v(12)},
		{"mspan_sys_bytes", "Number of bytes used for mspan structures obtained from system.", "gauge", v(12) + v(13)},
		{"mcache_inuse_bytes", "Number of bytes in use by mcache structures.", "gauge", v(14)},
		{"mcache_sys_bytes", "Number of bytes used for mcache structures obtained from system.", "gauge", v(14) + v(15)},
		{"buck_hash_sys_bytes", "Number of bytes used by the profiling bucket hash table.", "gauge", v(16)},
		{"gc_sys_bytes", "Number of bytes used for garbage collection system metadata.", "gauge", v(17)},
		{"other_sys_bytes", "Number of bytes used for other system allocations.", "gauge", v(18)},
		{"next_gc_bytes", "Number of heap bytes when next garbage collection will take place.", "gauge", v(19)},
		{"last_gc_time_seconds", "Number of seconds since 1970 of last garbage collection.", "gauge", lastGC(gc.LastGC)},
	} {
		family(w, "go_memstats_"+m.name, m.help, m.kind, m.val)
	}
}

// lastGC is 0 before the first collection, as MemStats.LastGC is.
func lastGC(t time.Time) float64 {
	if t.IsZero() {
		return 0
	}
	return float64(t.UnixNano()) / 1e9
}

// family writes a metric family of one unlabelled sample.
func family(w *bufio.Writer, name, help, kind string, v float64) {
	fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n%s %s\n", name, help, name, kind, name, format(v))
}
