package main

import (
	"sync"

	"github.com/apollo11/apollo11/client"
)

// askedLag is a follower's lag as cluster status works it out. Raft gives
// the leader no follower's match index, so each member is asked for the
// index it applied, and its lag is the leader's commit index minus that.
type askedLag struct {
	applied uint64
	err     error
}

// askMembers asks each member of st that has no lag for its status, all
// at once, so that a dead member costs one timeout, not one each. The
// members' ids are the addresses clients dial (protocol section 8.13).
func askMembers(cf *clientFlags, st *client.ClusterStatus) map[string]askedLag {
	if st.Role != "leader" {
		return nil // only the leader's commit index is the cluster's
	}
	out := make(map[string]askedLag)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range st.Members {
		m := &st.Members[i]
		if m.Lag != nil || m.ID == st.ID {
			continue
		}
		wg.Go(func() {
			one := *cf
			one.addr, one.addrs, one.acceptFollower = m.ID, []string{m.ID}, true
			one.reconnect = 0
			var a askedLag
			cl, err := one.dial()
			if err == nil {
				ctx, cancel := one.ctx()
				var ms client.ClusterStatus
				ms, err = cl.ClusterStatus(ctx)
				cancel()
				cl.Close()
				a.applied = ms.AppliedIndex
			}
			a.err = err
			mu.Lock()
			out[m.ID] = a
			mu.Unlock()
		})
	}
	wg.Wait()
	for i := range st.Members {
		m := &st.Members[i]
		if a, ok := out[m.ID]; ok && a.err == nil {
			lag := uint64(0)
			if st.CommitIndex > a.applied {
				lag = st.CommitIndex - a.applied
			}
			m.Lag = &lag
		}
	}
	return out
}
