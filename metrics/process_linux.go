package metrics

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"strconv"
	"syscall"
)

// writeProcess writes the process_* families from getrusage, getrlimit
// and /proc/self. A scrape costs one small file read and one directory walk.
func writeProcess(w *bufio.Writer) {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		family(w, "process_cpu_seconds_total", "Total user and system CPU time spent in seconds.", "counter",
			float64(ru.Utime.Nano()+ru.Stime.Nano())/1e9)
	}
	if n, ok := openFDs(); ok {
		family(w, "process_open_fds", "Number of open file descriptors.", "gauge", float64(n))
	}
	var lim syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim) == nil {
		family(w, "process_max_fds", "Maximum number of open file descriptors.", "gauge", float64(lim.Cur))
	}
	if vsize, rss, ok := statm(); ok {
		family(w, "process_virtual_memory_bytes", "Virtual memory size in bytes.", "gauge", float64(vsize))
		family(w, "process_resident_memory_bytes", "Resident memory size in bytes.", "gauge", float64(rss))
	}
}

// statm reads the virtual and resident sizes, in bytes, from
// /proc/self/statm (its first two fields, in pages).
func statm() (vsize, rss uint64, ok bool) {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0, 0, false
	}
	f := bytes.Fields(b)
	if len(f) < 2 {
		return 0, 0, false
	}
	size, err1 := strconv.ParseUint(string(f[0]), 10, 64)
	res, err2 := strconv.ParseUint(string(f[1]), 10, 64)
	if err1 != nil || err2 != nil {
		return 0, 0, false
	}
	page := uint64(os.Getpagesize())
	return size * page, res * page, true
}

// openFDs counts /proc/self/fd's entries, less the one its own reading
// opens. Names are read in chunks, so a process with many files does
// not hold all their names at once.
func openFDs() (int, bool) {
	d, err := os.Open("/proc/self/fd")
	if err != nil {
		return 0, false
	}
	defer d.Close()
	n := 0
	for {
		names, err := d.Readdirnames(512)
		n += len(names)
		if err == io.EOF {
			return n - 1, n > 0
		}
		if err != nil {
			return 0, false
		}
	}
}
