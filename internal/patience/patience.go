// Package patience scales the timeouts of tests with the machine they run
// on. A deadline that suits an idle laptop fails on a busy 2-core CI host.
//
// The factor is APOLLO11_TEST_SCALE when set (a number, at least 1).
// Otherwise it is one plus the one-minute load average per CPU, read from
// /proc/loadavg, capped at MaxFactor. Where there is no /proc it is 1.
//
// Load-heavy tests run only when APOLLO11_LOAD_TESTS is set (see LoadTests).
package patience

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// ScaleEnv overrides the measured factor, for a machine known to be slow.
const ScaleEnv = "APOLLO11_TEST_SCALE"

// LoadEnv turns on the load-heavy tests. CI sets it, and a developer may.
const LoadEnv = "APOLLO11_LOAD_TESTS"

// MaxFactor bounds the factor, so that a hung test still ends.
const MaxFactor = 20

var (
	once   sync.Once
	factor float64
)

// Factor is how much longer than on an idle machine a test should wait.
// It is measured once per process, when first asked.
func Factor() float64 {
	once.Do(func() { factor = measure(os.Getenv(ScaleEnv), readLoad, runtime.NumCPU()) })
	return factor
}

// Scale is d stretched by Factor.
func Scale(d time.Duration) time.Duration {
	return time.Duration(float64(d) * Factor())
}

// LoadTests skips t unless LoadEnv is set. Such tests open a thousand
// sockets or saturate the CPUs, which starves every test beside them.
func LoadTests(t testing.TB) {
	t.Helper()
	if os.Getenv(LoadEnv) == "" {
		t.Skip("a load test: set " + LoadEnv + "=1 to run it (CI does)")
	}
}

// measure computes the factor from the override, else the load per CPU.
func measure(override string, load func() (float64, bool), cpus int) float64 {
	if override != "" {
		if f, err := strconv.ParseFloat(override, 64); err == nil && f >= 1 {
			return min(f, MaxFactor)
		}
	}
	l, ok := load()
	if !ok || cpus < 1 {
		return 1
	}
	return min(1+l/float64(cpus), MaxFactor)
}

// readLoad returns the one-minute load average, if the system shows it.
func readLoad() (float64, bool) {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0, false
	}
	fields := strings.Fields(string(b))
	if len(fields) == 0 {
		return 0, false
	}
	l, err := strconv.ParseFloat(fields[0], 64)
	return l, err == nil && l >= 0
}
