package bench

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// clockTick is the kernel's USER_HZ, the unit of /proc/<pid>/stat times.
// It is 100 on every Linux build Go supports.
const clockTick = 100

// ProcCPU returns the user+system CPU time a process has used, from /proc/<pid>/stat.
func ProcCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name may hold spaces and parentheses.
	// So split after the last ')'. Fields then start at field 3 (state).
	// utime and stime are fields 14 and 15.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("cannot parse /proc/%d/stat", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("cannot parse /proc/%d/stat", pid)
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("cannot parse /proc/%d/stat", pid)
	}
	return time.Duration(ut+st) * time.Second / clockTick, nil
}

// ProcMem returns a process's resident set size and its peak, in bytes.
// They are VmRSS and VmHWM of /proc/<pid>/status.
func ProcMem(pid int) (rss, peak int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		var dst *int64
		switch k {
		case "VmRSS":
			dst = &rss
		case "VmHWM":
			dst = &peak
		default:
			continue
		}
		kb, perr := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if perr != nil {
			return 0, 0, fmt.Errorf("cannot parse %s in /proc/%d/status: %w", k, pid, perr)
		}
		*dst = kb << 10
	}
	return rss, peak, nil
}

// SelfCPU returns the CPU time (user+system) this process has used.
func SelfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// RaiseFileLimit raises this process's open-file soft limit to its hard limit.
// It returns the new soft limit. Child processes inherit it.
func RaiseFileLimit() (uint64, error) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, err
	}
	if lim.Cur < lim.Max {
		lim.Cur = lim.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
			return 0, err
		}
	}
	return lim.Cur, nil
}

// MachineCPU returns the busy and total CPU time of the whole machine so far.
// It sums over its cores, from the first line of /proc/stat.
func MachineCPU() (busy, total time.Duration, err error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 5 || f[0] != "cpu" {
		return 0, 0, fmt.Errorf("cannot parse /proc/stat")
	}
	var sum, idle int64
	for i, s := range f[1:] {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("cannot parse /proc/stat: %w", err)
		}
		if i >= 8 { // guest times are already counted in user and nice
			break
		}
		sum += v
		if i == 3 || i == 4 { // idle and iowait
			idle += v
		}
	}
	tick := func(n int64) time.Duration { return time.Duration(n) * time.Second / clockTick }
	return tick(sum - idle), tick(sum), nil
}
