package core

import (
	"fmt"
	"strconv"
	"unsafe"
)

// Memory each item costs the core besides the bytes the caps count,
// measured as live heap after a collection (docs/operations.md "Sizing").
const (
	PendingTaskCost  = 270   // a task not yet ended
	EndedTaskCost    = 300   // an ended task kept
	WaitCost         = 288   // a wait for done: its entry, map slots and a 64-byte req
	TaskTypeCost     = 1_100 // a task type name known, with its queues (TestCore_MemoryPerTaskType)
	KeptExecutorCost = 512   // a disconnected executor kept, besides its registration
	// SubmitterCost is a task's map slot naming its connection, with
	// --max-pending-per-conn on. It measured 24 to 38 bytes, by load factor.
	SubmitterCost = 40
	// ScheduleCost is a schedule's cost besides its counted bytes. That is its
	// struct, map slot and parsed expression.
	ScheduleCost = 512
)

// BudgetItem is one thing peers can make the main control hold, and the
// most memory the caps let it take.
type BudgetItem struct {
	What  string
	Bytes int64
}

// MemoryBudget lists what the core's caps let peers make it hold under
// cfg. Zero values mean the defaults. A byte cap of -1 (none) bounds
// nothing, and is an error here.
func MemoryBudget(cfg Config) ([]BudgetItem, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	for name, v := range map[string]int{"--max-pending-bytes": cfg.MaxPendingBytes,
		"--retention-max-bytes": cfg.RetentionMaxBytes, "--max-state-bytes": cfg.MaxStateBytes} {
		if v < 0 {
			return nil, fmt.Errorf("%s -1: no cap, no memory bound", name)
		}
	}
	n := func(v int) string { return strconv.Itoa(v) }
	items := []BudgetItem{
		{"tasks not yet ended: --max-pending " + n(cfg.MaxPending) + " x " + n(PendingTaskCost) + " B",
			int64(cfg.MaxPending) * PendingTaskCost},
		{"what they carry, depends_on ids included: --max-pending-bytes", int64(cfg.MaxPendingBytes)},
		{"ended tasks kept: --retention-max " + n(cfg.RetentionMax) + " x " + n(EndedTaskCost) + " B",
			int64(cfg.RetentionMax) * EndedTaskCost},
		{"what those carry: --retention-max-bytes", int64(cfg.RetentionMaxBytes)},
		{"shared state: --max-state-bytes", int64(cfg.MaxStateBytes)},
		{"waits for done: --max-waits " + n(cfg.MaxWaits) + " x " + n(WaitCost) + " B", int64(cfg.MaxWaits) * WaitCost},
		{"task types known: --max-task-types " + n(cfg.MaxTaskTypes) + " x " + n(TaskTypeCost) + " B",
			int64(cfg.MaxTaskTypes) * TaskTypeCost},
		{"registrations, handler descriptions included: " + n(maxRegBytes>>20) + " MiB counted, twice that in memory", 2 * maxRegBytes},
		{"disconnected executors kept: --max-kept-executors " + n(cfg.MaxKeptExecutors) + " x " + n(KeptExecutorCost) + " B",
			int64(cfg.MaxKeptExecutors) * KeptExecutorCost},
		{"schedules: --max-schedules " + n(cfg.MaxSchedules) + " x (--max-schedule-bytes " + n(cfg.MaxScheduleBytes) +
			" + " + n(ScheduleCost) + " B)", int64(cfg.MaxSchedules) * int64(cfg.MaxScheduleBytes+ScheduleCost)},
		{"recent transitions for the dashboard: " + n(historySize) + " x " + n(int(unsafe.Sizeof(historyEntry{}))) + " B",
			historySize * int64(unsafe.Sizeof(historyEntry{}))},
	}
	if cfg.MaxPendingPerConn > 0 {
		items = append(items, BudgetItem{"each task's connection, for --max-pending-per-conn: --max-pending " +
			n(cfg.MaxPending) + " x " + n(SubmitterCost) + " B", int64(cfg.MaxPending) * SubmitterCost})
	}
	return items, nil
}
