package maincontrol

import (
	"strconv"

	"github.com/apollo11/apollo11/maincontrol/core"
)

// ConnCost is what an open connection costs besides its buffers. It is an
// estimate of the server's, the core's and gnet's records of it.
const ConnCost = 2 << 10

// MemoryBudget lists what peers can make the main control hold under cfg,
// with zero values read as the defaults. The core's caps come first, then
// the connections and their buffers. The unit's values must add up to less
// than its GOMEMLIMIT. The defaults must add up to less than the figure in
// docs/operations.md (systemd/units_test.go).
func MemoryBudget(cfg Config) ([]core.BudgetItem, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	items, err := core.MemoryBudget(cfg.Core)
	if err != nil {
		return nil, err
	}
	if cfg.RaftListen != "" {
		// A leader under steady load snapshots from a shadow core
		// (cluster_snapwait.go): a second copy of the core's state. The
		// core's items bound it, with waits it lacks: a little over.
		var state int64
		for _, it := range items {
			state += it.Bytes
		}
		items = append(items, core.BudgetItem{What: "cluster mode: a leader's raft snapshot while ahead of the commit, " +
			"a second copy of the items above", Bytes: state})
	}
	return append(items,
		core.BudgetItem{What: "connections: --max-conns " + strconv.Itoa(cfg.MaxConns) + " x " + strconv.Itoa(ConnCost) + " B",
			Bytes: int64(cfg.MaxConns) * ConnCost},
		// Executors that leave holding tasks are kept past the cap until their timeout.
		core.BudgetItem{What: "executors kept past the cap, holding tasks: --max-conns " + strconv.Itoa(cfg.MaxConns) +
			" x " + strconv.Itoa(core.KeptExecutorCost) + " B", Bytes: int64(cfg.MaxConns) * core.KeptExecutorCost},
		core.BudgetItem{What: "unsent output: all connections, and one connection's round past its cap",
			Bytes: int64(cfg.MaxOutboundTotal + cfg.MaxOutbound)},
		core.BudgetItem{What: "input of paused connections", Bytes: int64(cfg.MaxPausedTotal)},
		core.BudgetItem{What: "incomplete frames", Bytes: int64(cfg.MaxPartialTotal)},
	), nil
}
