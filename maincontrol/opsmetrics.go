package maincontrol

import (
	"github.com/apollo11/apollo11/maincontrol/core"
	"github.com/apollo11/apollo11/metrics"
)

// addOpsMetrics exposes the operator's changes. They are paused types,
// state repairs, pauses and executors' type changes (protocol 8.5 to 8.7).
func addOpsMetrics(r *metrics.Registry, s *Server) {
	ops := func() core.OpsCounts {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.core.Ops()
	}
	r.GaugeFunc("apollo11_task_types_paused", "Task types paused: none of their tasks is dispatched until resumed.", func() float64 {
		s.mu.Lock()
		defer s.mu.Unlock()
		return float64(s.core.PausedTypes())
	})
	r.CounterFunc("apollo11_state_sets_total", "Shared-state keys set by hand (state_set).", func() float64 { return float64(ops().StateSets) })
	r.CounterFunc("apollo11_state_dels_total", "Shared-state keys deleted by hand (state_del).", func() float64 { return float64(ops().StateDels) })
	r.CounterFunc("apollo11_state_conflicts_total", "State repairs refused: their state_version was not the current one.", func() float64 {
		return float64(ops().StateConflicts)
	})
	r.CounterFunc("apollo11_type_pauses_total", "Pauses of a task type that changed it.", func() float64 { return float64(ops().Pauses) })
	r.CounterFunc("apollo11_type_resumes_total", "Resumes of a task type that changed it.", func() float64 { return float64(ops().Resumes) })
	r.CounterFunc("apollo11_executor_type_changes_total", "Executors' types messages that changed their task types.", func() float64 {
		return float64(ops().TypeChanges)
	})
}
