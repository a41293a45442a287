package core

import (
	"fmt"
	"net"
	"slices"
	"strconv"

	"github.com/apollo11/apollo11/wire"
)

// Role is a cluster member's Raft role (protocol section 8.13). A main
// control that is no member is always RoleLeader: it serves.
type Role uint8

// Roles. The zero value serves, so a single main control needs none.
const (
	RoleLeader Role = iota
	RoleFollower
	RoleCandidate
)

func (r Role) String() string {
	switch r {
	case RoleLeader:
		return "leader"
	case RoleCandidate:
		return "candidate"
	}
	return "follower"
}

// ClusterMember is one member of the configuration, for cluster_status.
type ClusterMember struct {
	ID, Raft   string
	Voter      bool
	MatchIndex uint64
	Lag        uint64
	HasMatch   bool // match_index and lag are known (on the leader)
}

// ClusterStatus is what cluster_status_ok says.
type ClusterStatus struct {
	ID, Leader                      string
	Role                            Role
	Term, CommitIndex, AppliedIndex uint64
	Members                         []ClusterMember
}

// ClusterChange is an admin request of the cluster group, checked.
type ClusterChange struct {
	Kind  wire.Kind // cluster_add, cluster_remove or cluster_transfer
	ID    string
	Raft  string
	Voter bool
}

// Cluster is the replication the core's server runs, in cluster mode.
// Neither call may wait: the core runs under the server's lock.
type Cluster interface {
	// Status reads the member's view of the cluster.
	Status() (ClusterStatus, error)
	// Change starts ch. Its outcome comes back through Core.ClusterDone.
	Change(peer PeerID, req string, ch ClusterChange)
}

// clusterFeatureList is a member's welcome features: it speaks the group.
var clusterFeatureList = featureList + "," + wire.FeatureCluster

// Cluster keys.
var (
	kRole         = wire.MustKey("role")
	kLeader       = wire.MustKey("leader")
	kID           = wire.MustKey("id")
	kTerm         = wire.MustKey("term")
	kCommitIndex  = wire.MustKey("commit_index")
	kAppliedIndex = wire.MustKey("applied_index")
)

// SetRole tells the core its role and the leader's id ("" when not
// known). Only the leader takes requests, registers executors and ticks.
func (c *Core) SetRole(r Role, leader string) {
	if c.role != r {
		c.log.Info("cluster role", "role", r.String(), "leader", leader)
	}
	c.role, c.leader = r, leader
}

// Role returns the member's role.
func (c *Core) Role() Role { return c.role }

// serving reports whether requests are taken: always on a single main
// control, on the leader in a cluster.
func (c *Core) serving() bool { return c.role == RoleLeader }

// notLeader refuses a request on a member that is not the leader. The
// request changed nothing, so the peer may send it anywhere.
func (c *Core) notLeader(p *peer, req string) {
	b := c.begin(wire.KindError, req)
	b.StrK(kCode, string(wire.CodeNotLeader))
	if c.leader != "" {
		b.StrK(kLeader, c.leader)
		b.StrK(kMessage, "this member is a "+c.role.String()+"; the leader is "+c.leader)
	} else {
		b.StrK(kMessage, "this member is a "+c.role.String()+"; no leader is known yet")
	}
	c.send(p.id, &b)
}

// helloRole adds role and leader to a member's hello_ok.
func (c *Core) helloRole(b *wire.Builder) {
	if c.cfg.Cluster == nil {
		return
	}
	b.StrK(kRole, c.role.String())
	if c.leader != "" {
		b.StrK(kLeader, c.leader)
	}
}

// clusterRequest answers the messages of the cluster group (protocol
// section 8.13). A main control that is no cluster member does not
// speak the group, so they are unknown_type there (section 8).
func (c *Core) clusterRequest(p *peer, m *wire.Message, req string) {
	if c.cfg.Cluster == nil {
		c.sendError(p, req, wire.CodeUnknownType, "unknown type "+strconv.Quote(clipText(m.Type()))+
			": this main control is not a cluster member")
		return
	}
	if m.Kind() == wire.KindClusterStatus {
		c.clusterStatus(p, req)
		return
	}
	if !c.requireAdmin(p, m, req) {
		return
	}
	if !c.serving() {
		c.notLeader(p, req)
		return
	}
	ch := ClusterChange{Kind: m.Kind()}
	needID := ch.Kind != wire.KindClusterTransfer
	var ok bool
	if ch.ID, ok = m.Get("id"); ok || needID {
		if err := hostPort("id", ch.ID, ok); err != nil {
			c.badRequest(p, req, err)
			return
		}
	}
	if ch.Kind == wire.KindClusterAdd {
		var has bool
		ch.Raft, has = m.Get("raft")
		if err := hostPort("raft", ch.Raft, has); err != nil {
			c.badRequest(p, req, err)
			return
		}
		voter, err := m.BoolOr("voter", true)
		if err != nil {
			c.badRequest(p, req, err)
			return
		}
		ch.Voter = voter
	}
	// The message borrows the read buffer; the change outlives it.
	ch.Kind, ch.ID, ch.Raft = wire.Kind(string([]byte(ch.Kind))), string([]byte(ch.ID)), string([]byte(ch.Raft))
	c.log.Info("cluster change asked", append(c.askedBy(p), "type", string(ch.Kind), "id", ch.ID, "raft", ch.Raft)...)
	c.cfg.Cluster.Change(p.id, req, ch)
}

// hostPort checks a member address value.
func hostPort(key, v string, present bool) error {
	if !present {
		return wire.MissingKey(key)
	}
	if _, _, err := net.SplitHostPort(v); err != nil || len(v) > 256 {
		return &wire.ValueError{Key: key, Reason: "must be host:port"}
	}
	return nil
}

// ClusterDone answers a change started by Cluster.Change: cluster_ok, or
// an error with code. The peer may be gone by then.
func (c *Core) ClusterDone(peer PeerID, req string, code wire.Code, msg string) {
	p := c.peers[peer]
	if p == nil {
		return
	}
	if code != "" {
		c.sendError(p, req, code, msg)
		return
	}
	b := c.begin(wire.KindClusterOK, req)
	c.send(p.id, &b)
}

// clusterStatus answers cluster_status, on any member.
func (c *Core) clusterStatus(p *peer, req string) {
	st, err := c.cfg.Cluster.Status()
	if err != nil {
		c.sendError(p, req, wire.CodeUnavailable, "cannot read the cluster's state: "+err.Error())
		return
	}
	b := c.begin(wire.KindClusterStatusOK, req)
	b.StrK(kID, st.ID)
	b.StrK(kRole, st.Role.String())
	if st.Leader != "" {
		b.StrK(kLeader, st.Leader)
	}
	b.UintK(kTerm, st.Term)
	b.UintK(kCommitIndex, st.CommitIndex)
	b.UintK(kAppliedIndex, st.AppliedIndex)
	b.UintK(kCount, uint64(len(st.Members)))
	for i, m := range st.Members {
		pre := "member." + strconv.Itoa(i) + "."
		b.Str(pre+"id", m.ID)
		b.Str(pre+"raft", m.Raft)
		b.Bool(pre+"voter", m.Voter)
		if m.HasMatch {
			b.Uint(pre+"match_index", m.MatchIndex)
			b.Uint(pre+"lag", m.Lag)
		}
	}
	c.send(p.id, &b)
}

// BeginLeaderEpoch begins the epoch of a leadership (spec section 7): a
// leader of Raft term T uses epoch T, above every epoch an older leader
// could have used, committed or not. So a version an old leader
// handed out and never committed is never handed out again. It is
// Recovered and BeginEpoch for a core that a follower kept by replay.
func (c *Core) BeginLeaderEpoch(epoch uint64) error {
	if epoch < c.nextEpoch || epoch > maxEpoch {
		return fmt.Errorf("leader epoch %d: the next epoch must be %d to %d", epoch, c.nextEpoch, uint64(maxEpoch))
	}
	c.Recovered()
	r := c.newRecord(recEpoch)
	r.epoch = epoch
	if !c.commit(r) {
		return fmt.Errorf("epoch %d refused", epoch)
	}
	c.log.Info("leader epoch begun", "epoch", c.epoch)
	return nil
}

// compactRunsDirty keeps a follower's list of runs to settle to one
// entry per run. Replay adds to it, and only a leader settles runs.
func (c *Core) compactRunsDirty() {
	if len(c.runs.dirty) > 64 {
		slices.Sort(c.runs.dirty)
		c.runs.dirty = slices.Compact(c.runs.dirty)
	}
}
