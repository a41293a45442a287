package metrics_test

import (
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/metrics"
)

// scrape reads a registry's exposition into its samples (series line to
// value) and its families (name to TYPE), checking the text's shape: every
// family has one HELP and one TYPE, and every sample belongs to one.
func scrape(t *testing.T, r *metrics.Registry) (map[string]float64, map[string]string) {
	t.Helper()
	var b strings.Builder
	_, err := r.WriteTo(&b)
	require.NoError(t, err)
	samples, types, helps := map[string]float64{}, map[string]string{}, map[string]bool{}
	line := regexp.MustCompile(`^([a-z_][a-z0-9_]*)(\{[a-z_]+="[^"]*"\})? (\S+)$`)
	for _, l := range strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n") {
		if h, ok := strings.CutPrefix(l, "# HELP "); ok {
			name, _, _ := strings.Cut(h, " ")
			require.False(t, helps[name], "HELP twice for %s", name)
			helps[name] = true
			continue
		}
		if ty, ok := strings.CutPrefix(l, "# TYPE "); ok {
			name, kind, _ := strings.Cut(ty, " ")
			require.NotContains(t, types, name, "TYPE twice for %s", name)
			types[name] = kind
			continue
		}
		m := line.FindStringSubmatch(l)
		require.NotNil(t, m, "bad sample line %q", l)
		v, err := strconv.ParseFloat(m[3], 64)
		require.NoError(t, err, l)
		base := strings.TrimSuffix(strings.TrimSuffix(m[1], "_sum"), "_count")
		require.True(t, types[m[1]] != "" || types[base] != "", "sample %q has no TYPE", l)
		samples[m[1]+m[2]] = v
	}
	for name := range types {
		require.True(t, helps[name], "no HELP for %s", name)
	}
	return samples, types
}

// The standard names with their types, and values a live process has.
func TestRuntimeMetrics_NamesAndValues(t *testing.T) {
	var r metrics.Registry
	r.RuntimeMetrics()
	runtime.GC()
	before := time.Now()
	s, types := scrape(t, &r)

	want := map[string]string{
		"go_gc_duration_seconds": "summary", "go_goroutines": "gauge", "go_threads": "gauge", "go_info": "gauge",
		"go_memstats_alloc_bytes": "gauge", "go_memstats_alloc_bytes_total": "counter", "go_memstats_sys_bytes": "gauge",
		"go_memstats_mallocs_total": "counter", "go_memstats_frees_total": "counter",
		"go_memstats_heap_alloc_bytes": "gauge", "go_memstats_heap_sys_bytes": "gauge", "go_memstats_heap_idle_bytes": "gauge",
		"go_memstats_heap_inuse_bytes": "gauge", "go_memstats_heap_released_bytes": "gauge", "go_memstats_heap_objects": "gauge",
		"go_memstats_stack_inuse_bytes": "gauge", "go_memstats_stack_sys_bytes": "gauge",
		"go_memstats_mspan_inuse_bytes": "gauge", "go_memstats_mspan_sys_bytes": "gauge",
		"go_memstats_mcache_inuse_bytes": "gauge", "go_memstats_mcache_sys_bytes": "gauge",
		"go_memstats_buck_hash_sys_bytes": "gauge", "go_memstats_gc_sys_bytes": "gauge", "go_memstats_other_sys_bytes": "gauge",
		"go_memstats_next_gc_bytes": "gauge", "go_memstats_last_gc_time_seconds": "gauge",
		"process_start_time_seconds": "gauge",
	}
	if runtime.GOOS == "linux" {
		for name, kind := range map[string]string{"process_cpu_seconds_total": "counter", "process_open_fds": "gauge",
			"process_max_fds": "gauge", "process_virtual_memory_bytes": "gauge", "process_resident_memory_bytes": "gauge"} {
			want[name] = kind
		}
	}
	assert.Equal(t, want, types)

	assert.Equal(t, 1.0, s[`go_info{version="`+runtime.Version()+`"}`])
	assert.GreaterOrEqual(t, s["go_goroutines"], 2.0) // this test and its runner
	assert.GreaterOrEqual(t, s["go_threads"], 1.0)
	assert.GreaterOrEqual(t, s["go_gc_duration_seconds_count"], 1.0)
	prev := 0.0
	for _, q := range []string{"0", "0.25", "0.5", "0.75", "1"} {
		v := s[`go_gc_duration_seconds{quantile="`+q+`"}`]
		assert.GreaterOrEqual(t, v, prev, "quantile %s", q)
		prev = v
	}
	assert.Less(t, prev, 10.0, "a GC pause of over 10 s")
	assert.Greater(t, s["go_gc_duration_seconds_sum"], 0.0)

	lastGC := time.Unix(0, int64(s["go_memstats_last_gc_time_seconds"]*1e9))
	assert.WithinRange(t, lastGC, before.Add(-time.Minute), time.Now())
	start := time.Unix(0, int64(s["process_start_time_seconds"]*1e9))
	assert.WithinRange(t, start, before.Add(-time.Hour), before)

	assert.Greater(t, s["go_memstats_heap_alloc_bytes"], 0.0)
	assert.Equal(t, s["go_memstats_heap_alloc_bytes"], s["go_memstats_alloc_bytes"])
	assert.GreaterOrEqual(t, s["go_memstats_alloc_bytes_total"], s["go_memstats_alloc_bytes"])
	assert.GreaterOrEqual(t, s["go_memstats_mallocs_total"], s["go_memstats_frees_total"])
	assert.Greater(t, s["go_memstats_heap_objects"], 0.0)
	assert.GreaterOrEqual(t, s["go_memstats_heap_inuse_bytes"], s["go_memstats_heap_alloc_bytes"])
	assert.Equal(t, s["go_memstats_heap_sys_bytes"], s["go_memstats_heap_inuse_bytes"]+s["go_memstats_heap_idle_bytes"])
	assert.GreaterOrEqual(t, s["go_memstats_sys_bytes"], s["go_memstats_heap_sys_bytes"])
	assert.Greater(t, s["go_memstats_stack_inuse_bytes"], 0.0)
	assert.Greater(t, s["go_memstats_next_gc_bytes"], 0.0)

	if runtime.GOOS != "linux" {
		return
	}
	assert.Greater(t, s["process_cpu_seconds_total"], 0.0)
	assert.Greater(t, s["process_resident_memory_bytes"], float64(1<<20))
	assert.Greater(t, s["process_virtual_memory_bytes"], s["process_resident_memory_bytes"])
	assert.GreaterOrEqual(t, s["process_open_fds"], 3.0)
	assert.Greater(t, s["process_max_fds"], s["process_open_fds"])
}

// Counts follow the process: files opened, goroutines started, CPU spent.
func TestRuntimeMetrics_Follow(t *testing.T) {
	var r metrics.Registry
	r.RuntimeMetrics()
	before, _ := scrape(t, &r)

	stop := make(chan struct{})
	const extra = 20
	for range extra {
		go func() { <-stop }()
	}
	defer close(stop)
	var files []*os.File
	for i := range 5 {
		f, err := os.Create(filepath.Join(t.TempDir(), strconv.Itoa(i)))
		require.NoError(t, err)
		files = append(files, f)
	}
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	for spin := time.Now(); time.Since(spin) < 50*time.Millisecond; {
		_, _ = io.Discard.Write(make([]byte, 64))
	}
	after, _ := scrape(t, &r)
	assert.GreaterOrEqual(t, after["go_goroutines"], float64(extra+1)) // these, and this test
	if runtime.GOOS == "linux" {
		assert.Equal(t, before["process_open_fds"]+5, after["process_open_fds"])
		assert.Greater(t, after["process_cpu_seconds_total"], before["process_cpu_seconds_total"])
	}
}

// A scrape of the runtime metrics, to keep an eye on its cost.
func BenchmarkRuntimeMetrics(b *testing.B) {
	var r metrics.Registry
	r.RuntimeMetrics()
	b.ReportAllocs()
	for b.Loop() {
		_, _ = r.WriteTo(io.Discard)
	}
}
