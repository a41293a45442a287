package bench

import (
	"bufio"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

// ProcWriteBytes returns the bytes a process caused to be written to storage.
// It reads write_bytes of /proc/<pid>/io.
// Pages of tmpfs are not counted.
// So measure with the data dir on a real block device.
func ProcWriteBytes(pid int) (uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "write_bytes:"); ok {
			return strconv.ParseUint(strings.TrimSpace(v), 10, 64)
		}
	}
	return 0, fmt.Errorf("no write_bytes in /proc/%d/io", pid)
}

// snapshotMetric is the main control's counter of snapshot bytes written.
const snapshotMetric = "apollo11_snapshot_written_bytes_total"

// SnapshotWritten returns the bytes of snapshot files the main control
// has written, from its /metrics.
// It returns false when it does not say, as with an older binary or no HTTP listener.
func (m *MainControl) SnapshotWritten() (uint64, bool) {
	if m == nil || m.HTTP == "" {
		return 0, false
	}
	cl := http.Client{Timeout: 5 * time.Second}
	resp, err := cl.Get("http://" + m.HTTP + "/metrics")
	if err != nil {
		return 0, false
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), snapshotMetric+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return uint64(f), err == nil
		}
	}
	return 0, false
}

// DiskReport is what the main control wrote to disk during a run.
type DiskReport struct {
	WrittenBytes uint64  `json:"written_bytes"`
	PerTask      float64 `json:"written_bytes_per_task"`
	// SnapshotBytes is the part of it that snapshot files took, as the main control counts them.
	// It is omitted when the main control does not say.
	SnapshotBytes   *uint64 `json:"snapshot_bytes,omitempty"`
	SnapshotPerTask float64 `json:"snapshot_bytes_per_task,omitempty"`
}

// diskMark is the disk counters at one moment.
type diskMark struct {
	ok, snapOK     bool
	written, snaps uint64
}

func markDisk(t *target) diskMark {
	var d diskMark
	if t.pid <= 0 {
		return d
	}
	w, err := ProcWriteBytes(t.pid)
	d.ok, d.written = err == nil, w
	d.snaps, d.snapOK = t.mc.SnapshotWritten()
	return d
}

// setDisk fills the report's disk figures from two marks.
func (r *Report) setDisk(a, b diskMark) {
	if !a.ok || !b.ok || b.written < a.written {
		return
	}
	d := &DiskReport{WrittenBytes: b.written - a.written}
	if r.Completed > 0 {
		d.PerTask = float64(d.WrittenBytes) / float64(r.Completed)
	}
	if a.snapOK && b.snapOK && b.snaps >= a.snaps {
		n := b.snaps - a.snaps
		d.SnapshotBytes = &n
		if r.Completed > 0 {
			d.SnapshotPerTask = float64(n) / float64(r.Completed)
		}
	}
	r.Disk = d
}

// diskLine is the report's line on disk writes.
func (r *Report) diskLine() string {
	d := r.Disk
	if d == nil {
		return ""
	}
	s := fmt.Sprintf("  disk          wrote %.1f MiB = %.0f B per task completed", float64(d.WrittenBytes)/(1<<20), d.PerTask)
	if d.SnapshotBytes != nil {
		s += fmt.Sprintf("; snapshots %.1f MiB = %.0f B per task", float64(*d.SnapshotBytes)/(1<<20), d.SnapshotPerTask)
	}
	return s + " (write_bytes of /proc/PID/io)\n"
}
