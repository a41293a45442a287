package maincontrol

import (
	"github.com/apollo11/apollo11/cluster"
	"github.com/apollo11/apollo11/internal/patience"
)

// loadedRaft gives a test member Raft's default timeouts stretched by
// the host's load, unless the test set its own. A leader steps down when
// no quorum answered within half its heartbeat timeout: 200 ms by
// default. A busy host running -race delays heartbeats that long by
// scheduling alone, and a test that needs one leader throughout then
// fails for a stepdown it did not ask for.
func loadedRaft(cfg Config) Config {
	if cfg.RaftHeartbeatTimeout == 0 {
		cfg.RaftHeartbeatTimeout = patience.Scale(cluster.DefaultHeartbeatTimeout)
	}
	if cfg.RaftElectionTimeout == 0 {
		cfg.RaftElectionTimeout = patience.Scale(cluster.DefaultElectionTimeout)
	}
	return cfg
}
