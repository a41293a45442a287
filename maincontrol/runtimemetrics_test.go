package maincontrol_test

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/apollo11/apollo11/maincontrol"
)

// /metrics carries the process and Go runtime families beside apollo11's.
func TestServer_MetricsRuntime(t *testing.T) {
	httpAddr := freeAddr(t)
	startServer(t, maincontrol.Config{HTTPListen: httpAddr})
	body := httpGet(t, "http://"+httpAddr+"/metrics")
	names := []string{"go_goroutines", "go_threads", "go_gc_duration_seconds", "go_memstats_heap_alloc_bytes",
		"go_memstats_alloc_bytes_total", "process_start_time_seconds"}
	if runtime.GOOS == "linux" {
		names = append(names, "process_cpu_seconds_total", "process_resident_memory_bytes", "process_open_fds",
			"process_max_fds", "process_virtual_memory_bytes")
	}
	for _, n := range names {
		assert.Contains(t, body, "\n# TYPE "+n+" ")
	}
	assert.Contains(t, body, "\ngo_info{version=\""+runtime.Version()+"\"} 1\n")
	assert.Contains(t, body, "apollo11_executors 0\n")
}
