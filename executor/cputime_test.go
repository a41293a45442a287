package executor_test

import (
	"syscall"
	"testing"
	"time"
)

// cpuTime returns the process's user+system CPU time so far.
func cpuTime(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports the process CPU time per op since start as cpu-ns/op:
// unlike ns/op it does not grow when other processes share the machine.
// It counts every goroutine of the test binary, the fake's included.
func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(cpuTime(b)-start)/float64(b.N), "cpu-ns/op")
}
