package maincontrol

import (
	"sync/atomic"
	"time"

	"github.com/apollo11/apollo11/maincontrol/core"
	"github.com/apollo11/apollo11/metrics"
	"github.com/apollo11/apollo11/snapshot"
)

// serverMetrics counts what the core observes. Gauges are read when
// scraped, from the core under the server's mutex and from the log's stats.
type serverMetrics struct {
	reg           metrics.Registry
	dispatchWait  *metrics.Histogram
	retries       *metrics.Counter
	timeouts      *metrics.Counter
	startTimeouts *metrics.Counter
	lost          *metrics.Counter
	ended         [core.NumStates + 1]*metrics.Counter
	adminRequests map[string]*metrics.Counter // by core.AdminOps
	adminTasks    map[string]*metrics.Counter
	// snapFailures counts snapshots that failed; snapFailing is 1 while
	// the latest one did. A failing snapshot is not an outage (the log
	// still holds every change), so /healthz stays ok, but the log then
	// grows without bound and a restart replays all of it.
	snapFailures *metrics.Counter
	snapFailing  atomic.Bool
	policy       policyCounts // policies.go
}

var _ core.Observer = (*serverMetrics)(nil)

// msBounds are histogram buckets for times the core keeps in whole
// milliseconds. A bucket under 1 ms could only ever hold the zeros.
var msBounds = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

func newServerMetrics(s *Server) *serverMetrics {
	m := &serverMetrics{}
	r := &m.reg
	r.GaugeVecFunc("apollo11_tasks", "Tasks by state.", "state", func() map[string]float64 {
		s.mu.Lock()
		counts := s.core.Counts()
		s.mu.Unlock()
		out := make(map[string]float64, core.NumStates)
		for _, st := range core.AllStates {
			out[st.String()] = float64(counts[st])
		}
		return out
	})
	r.GaugeFunc("apollo11_executors", "Executors connected.", func() float64 {
		s.mu.Lock()
		defer s.mu.Unlock()
		n := 0
		for _, e := range s.core.Executors() {
			if e.Connected {
				n++
			}
		}
		return float64(n)
	})
	if s.cfg.LogDropped != nil {
		r.CounterFunc("apollo11_log_records_dropped_total", "Log records dropped because the log's reader (stderr) fell behind; a notice line in the log says how many at each gap.",
			func() float64 { return float64(s.cfg.LogDropped()) })
	}
	r.GaugeFunc("apollo11_connections", "Open connections.", func() float64 {
		s.mu.Lock()
		defer s.mu.Unlock()
		return float64(len(s.gate.conns))
	})
	r.GaugeFunc("apollo11_unsent_bytes", "Output the connections hold that their peers have not read yet, as of each one's latest write (cut past 8 x the per-connection cap when peers do not catch up).", func() float64 {
		s.mu.Lock()
		defer s.mu.Unlock()
		return float64(s.flow.unsentTotal)
	})
	r.GaugeFunc("apollo11_incomplete_frame_bytes", "Input held in frames the connections have not finished sending.", func() float64 {
		s.mu.Lock()
		defer s.mu.Unlock()
		return float64(s.flow.partialTotal)
	})
	r.GaugeFunc("apollo11_state_bytes", "Size of the shared state as --max-state-bytes counts it: each key's name and value (at least 20 bytes) plus 64.", func() float64 {
		s.mu.Lock()
		defer s.mu.Unlock()
		return float64(s.core.StateBytes())
	})
	r.GaugeFunc("apollo11_pending_bytes", "Bytes held by tasks not yet ended, as --max-pending-bytes counts them: args, type name, key, trace_id, 48 per depends_on id, and a failed attempt's outputs and error.", func() float64 {
		s.mu.Lock()
		defer s.mu.Unlock()
		return float64(s.core.PendingBytes())
	})
	r.GaugeFunc("apollo11_retained_bytes", "Bytes held by the ended tasks kept, as --retention-max-bytes counts them: what pending tasks count, plus outputs and error.", func() float64 {
		s.mu.Lock()
		defer s.mu.Unlock()
		return float64(s.core.RetainedBytes())
	})
	addOpsMetrics(r, s)
	r.CounterFunc("apollo11_timer_wakeups_total", "Times the main control's timers woke it: ticks, early ticks for a deadline an input brought, rounds of the event loops' watch. When idle, at most about one a second.",
		func() float64 { return float64(s.timers.wakeups.Load()) })
	m.dispatchWait = r.Histogram("apollo11_dispatch_wait_seconds", "Time tasks waited in pending before dispatch, in whole milliseconds (the core keeps time in ms).", msBounds)
	m.retries = r.Counter("apollo11_retries_total", "Attempts that failed and will run again.")
	m.timeouts = r.Counter("apollo11_task_timeouts_total", "Running tasks the main control took back because their timeout_ms passed with no result. An executor that enforces the timeout itself (the apollo11 executor does) reports a failed result first, counted in retries or failures instead.")
	m.startTimeouts = r.Counter("apollo11_start_timeouts_total", "Dispatched tasks not started in time.")
	m.lost = r.Counter("apollo11_executors_lost_total", "Executors lost after the heartbeat timeout.")
	m.adminRequests = r.CounterVec("apollo11_admin_requests_total", "Admin requests answered with success, dry runs included, by operation.", "op", core.AdminOps)
	m.adminTasks = r.CounterVec("apollo11_admin_tasks_total", "Tasks admin requests changed (requeued, cancelled, purged), by operation.", "op", core.AdminOps)
	for _, st := range []core.State{core.Succeeded, core.Failed, core.Cancelled} {
		m.ended[st] = r.Counter("apollo11_tasks_"+st.String()+"_total", "Tasks that ended "+st.String()+".")
	}
	m.addPolicyMetrics(s)
	if s.cfg.DataDir != "" {
		m.addStoreMetrics(func() snapshot.Stats {
			if s.store == nil { // still recovering
				return snapshot.Stats{}
			}
			return s.store.Stats()
		})
	}
	r.RuntimeMetrics()
	return m
}

// addStoreMetrics exposes the log's stats, read at each scrape.
func (m *serverMetrics) addStoreMetrics(stats func() snapshot.Stats) {
	r := &m.reg
	bounds := snapshot.FsyncBucketBounds()
	fb := make([]float64, len(bounds))
	for i, b := range bounds {
		fb[i] = b.Seconds()
	}
	r.HistogramFunc("apollo11_log_fsync_seconds", "Latency of log fsyncs.", fb, func() ([]uint64, float64) {
		s := stats()
		return s.FsyncHist[:], s.FsyncTotal.Seconds()
	})
	r.CounterFunc("apollo11_log_records_total", "Change records appended to the log.", func() float64 { return float64(stats().Records) })
	r.CounterFunc("apollo11_log_write_errors_total", "Failed log writes or fsyncs.", func() float64 { return float64(stats().WriteErrs) })
	r.GaugeFunc("apollo11_log_bytes", "Bytes in log segments.", func() float64 { return float64(stats().LogBytes) })
	r.GaugeFunc("apollo11_log_healthy", "1 while the log accepts writes.", func() float64 {
		if stats().Healthy {
			return 1
		}
		return 0
	})
	r.CounterFunc("apollo11_snapshots_total", "Snapshots written.", func() float64 { return float64(stats().Snapshots) })
	r.GaugeFunc("apollo11_snapshot_duration_seconds", "Time the last snapshot took.", func() float64 { return stats().SnapshotDuration.Seconds() })
	r.GaugeFunc("apollo11_snapshot_bytes", "Size of the newest snapshot (its manifest, when incremental).", func() float64 { return float64(stats().SnapshotBytes) })
	r.CounterFunc("apollo11_snapshot_written_bytes_total", "Bytes of snapshot files written: manifests and parts.", func() float64 { return float64(stats().SnapshotWritten) })
	m.snapFailures = r.Counter("apollo11_snapshot_failures_total", "Snapshots that failed (the log keeps every change meanwhile, and grows).")
	r.GaugeFunc("apollo11_snapshot_failing", "1 while the latest snapshot failed.", func() float64 {
		if m.snapFailing.Load() {
			return 1
		}
		return 0
	})
}

// SnapshotDone counts a snapshot that was written (err nil) or failed.
func (m *serverMetrics) SnapshotDone(err error) {
	if m.snapFailures == nil {
		return
	}
	if err != nil {
		m.snapFailures.Inc()
	}
	m.snapFailing.Store(err != nil)
}

func (m *serverMetrics) Dispatched(wait time.Duration) { m.dispatchWait.Observe(wait.Seconds()) }
func (m *serverMetrics) Retried()                      { m.retries.Inc() }
func (m *serverMetrics) TimedOut()                     { m.timeouts.Inc() }
func (m *serverMetrics) StartTimedOut()                { m.startTimeouts.Inc() }
func (m *serverMetrics) ExecutorLost()                 { m.lost.Inc() }
func (m *serverMetrics) Ended(s core.State) {
	if c := m.ended[s]; c != nil {
		c.Inc()
	}
}

// Admin counts an admin request and the tasks it changed.
func (m *serverMetrics) Admin(op string, n int) {
	if c := m.adminRequests[op]; c != nil {
		c.Inc()
		m.adminTasks[op].Add(uint64(n))
	}
}
