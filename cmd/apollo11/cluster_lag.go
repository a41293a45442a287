package main

import (
	"fmt"
	"io"
	"sync"

	"github.com/apollo11/apollo11/client"
)

// askedLag is what a member said when cluster status asked it. Raft gives
// the leader no follower's match index, so each member is asked for the
// index it applied, and its lag is the leader's commit index minus that.
type askedLag struct {
	role    string
	leader  string // the leader it knows, if any
	applied uint64
	err     error
}

// askMembers asks each member of st that has no lag for its status, all
// at once, so that a dead member costs one timeout, not one each. It asks
// them whatever the answering member's role: without a leader, which
// members are down is what the operator needs. Lags are only worked out
// from a leader's commit index, the only one that is the cluster's. The
// members' ids are the addresses clients dial (protocol section 8.13).
func askMembers(cf *clientFlags, st *client.ClusterStatus) map[string]askedLag {
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
				a.role, a.leader, a.applied = ms.Role, ms.Leader, ms.AppliedIndex
			}
			a.err = err
			mu.Lock()
			out[m.ID] = a
			mu.Unlock()
		})
	}
	wg.Wait()
	if st.Role != "leader" {
		return out
	}
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

// leaderOf returns the leader: the one the answering member names, else a
// member that answered as leader or that another member names and that
// answered. A member just restarted may not know the leader yet while
// the others do. It returns "" when no member leads.
func leaderOf(st client.ClusterStatus, asked map[string]askedLag) string {
	if st.Leader != "" {
		return st.Leader
	}
	for _, m := range st.Members {
		if a, ok := asked[m.ID]; ok && a.err == nil && a.role == "leader" {
			return m.ID
		}
	}
	for _, m := range st.Members {
		if a, ok := asked[m.ID]; ok && a.err == nil && a.leader != "" {
			if l, ok := asked[a.leader]; ok && l.err == nil {
				return a.leader
			}
		}
	}
	return ""
}

// noLeader says why no member leads when no member that answered leads or
// names a leader that answered, or "" when one does.
func noLeader(st client.ClusterStatus, asked map[string]askedLag) string {
	if leaderOf(st, asked) != "" {
		return ""
	}
	voters, up := 0, 0
	for _, m := range st.Members {
		if !m.Voter {
			continue
		}
		voters++
		if a, ok := asked[m.ID]; m.ID == st.ID || (ok && a.err == nil) {
			up++
		}
	}
	if up >= voters/2+1 {
		return fmt.Sprintf("no leader: %d of %d voters reachable; an election may be under way", up, voters)
	}
	return fmt.Sprintf("no leader: %d of %d voters reachable; a majority (%d) must be up to elect one", up, voters, voters/2+1)
}

// statusJSON is cluster status's --json output: the answering member's
// status, with what each other member said when asked.
type statusJSON struct {
	client.ClusterStatus
	Members  []memberJSON `json:"members"`
	NoLeader string       `json:"no_leader,omitempty"`
}

type memberJSON struct {
	client.ClusterMember
	Role         string  `json:"role,omitempty"`
	AppliedIndex *uint64 `json:"applied_index,omitempty"`
	Unreachable  string  `json:"unreachable,omitempty"` // why it did not answer
}

func printClusterStatusJSON(w io.Writer, st client.ClusterStatus, asked map[string]askedLag) error {
	out := statusJSON{ClusterStatus: st, NoLeader: noLeader(st, asked)}
	for _, m := range st.Members {
		mj := memberJSON{ClusterMember: m}
		if a, ok := asked[m.ID]; ok && a.err != nil {
			mj.Unreachable = a.err.Error()
		} else if ok {
			mj.Role, mj.AppliedIndex = a.role, &a.applied
		}
		out.Members = append(out.Members, mj)
	}
	return printJSON(w, out)
}
