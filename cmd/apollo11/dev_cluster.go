package main

import (
	"fmt"
	"net"
	"strconv"

	"github.com/apollo11/apollo11/cluster"
	"github.com/apollo11/apollo11/maincontrol"
)

// devRaftOffset puts a dev member's Raft port this far above its client
// port, when --raft-listen does not say.
const devRaftOffset = 1000

// devMembers turns dev's one main control into n members of a local
// cluster. Member i listens on --listen's port + i, Raft on --raft-listen's
// (or the client port + 1000) + i, and keeps its data in DATADIR-cluster/i.
// Only the first serves --http-listen. With n 0, cfg is alone.
func devMembers(cfg maincontrol.Config, n int) ([]maincontrol.Config, error) {
	if n == 0 {
		return []maincontrol.Config{cfg}, nil
	}
	if n < 1 || n > 9 {
		return nil, fmt.Errorf("--cluster %d: want 1 to 9 members (3 is the usual)", n)
	}
	if cfg.DataDir == "" {
		return nil, fmt.Errorf("--cluster needs a --data-dir: each member keeps its Raft log there")
	}
	host, port, err := splitPort("listen", dialAddr(cfg.Listen))
	if err != nil {
		return nil, err
	}
	raftHost, raftPort := host, port+devRaftOffset
	if cfg.RaftListen != "" {
		if raftHost, raftPort, err = splitPort("raft-listen", cfg.RaftListen); err != nil {
			return nil, err
		}
	}
	if port+n-1 > 65535 || raftPort+n-1 > 65535 {
		return nil, fmt.Errorf("--cluster %d: the ports from %d and %d do not fit below 65536", n, port, raftPort)
	}
	var members []cluster.Member
	for i := range n {
		members = append(members, cluster.Member{ID: net.JoinHostPort(host, strconv.Itoa(port+i)),
			Raft: net.JoinHostPort(raftHost, strconv.Itoa(raftPort+i)), Voter: true})
	}
	cfgs := make([]maincontrol.Config, n)
	for i, m := range members {
		c := cfg
		c.Listen, c.RaftListen, c.ClusterMembers = m.ID, m.Raft, members
		c.DataDir = fmt.Sprintf("%s-cluster/%d", cfg.DataDir, i+1)
		if i > 0 {
			c.HTTPListen = ""
		}
		if cfg.Logger != nil {
			c.Logger = cfg.Logger.With("member", i+1)
		}
		cfgs[i] = c
	}
	return cfgs, nil
}

// splitPort reads host:port from a flag's value.
func splitPort(flagName, addr string) (string, int, error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, fmt.Errorf("--%s %q: %w", flagName, addr, err)
	}
	port, err := strconv.Atoi(p)
	if err != nil || port < 1 || port > 65535 {
		return "", 0, fmt.Errorf("--%s %q: port %q is not a number from 1 to 65535", flagName, addr, p)
	}
	return host, port, nil
}
