package maincontrol

import (
	"errors"
	"io"

	"github.com/hashicorp/raft"

	"github.com/apollo11/apollo11/cluster"
	"github.com/apollo11/apollo11/maincontrol/core"
	"github.com/apollo11/apollo11/snapshot"
	"github.com/apollo11/apollo11/wire"
)

// clusterApp is the core as Raft's state machine (cluster.App). Each
// call runs on Raft's FSM goroutine and takes Server.mu.
type clusterApp clusterMode

// Apply replays a committed batch into the core, unless this leadership
// made it: the core applied those records when it made them.
func (a *clusterApp) Apply(index uint64, b cluster.Batch) error {
	cm := (*clusterMode)(a)
	s := cm.s
	s.mu.Lock()
	cm.applied = index
	if cm.leadTerm != 0 && b.Origin.Term == cm.leadTerm && b.Origin.ID == cm.id {
		cm.ownLSN = b.LastLSN
		if cm.ownLSN == s.gate.lastLSN {
			cm.caughtUp()
		}
		s.mu.Unlock()
		return nil
	}
	err := replayBatch(s.core, b)
	cm.followerRole() // an entry comes from the leader: it is known
	wakes := s.wakes.take(nil)
	s.mu.Unlock()
	wake(wakes)
	return err
}

// Snapshot freezes the core, as of the last index applied. A leader's
// core may hold changes not yet committed, while the snapshot must be the
// state at its index exactly. Then the snapshot waits a while for the
// commit to catch up (cluster_snapwait.go). Past that, the write rebuilds
// the committed state on Raft's persist goroutine, and this FSM goroutine
// does not wait.
func (a *clusterApp) Snapshot() (func(w io.Writer) error, error) {
	cm := (*clusterMode)(a)
	s := cm.s
	s.mu.Lock()
	index, node := cm.applied, cm.node
	if cm.leadTerm != 0 && s.gate.lastLSN > cm.ownLSN {
		if cm.putOff() {
			s.mu.Unlock()
			return nil, cluster.ErrSnapshotLater
		}
		cm.taken()
		cm.snap.shadows++
		s.mu.Unlock()
		return func(w io.Writer) error { return cm.writeCommitted(node, index, w) }, nil
	}
	cm.taken()
	cm.snap.frozen++
	snap := s.core.Freeze()
	s.mu.Unlock()
	return func(w io.Writer) error {
		return snapshot.WriteStream(w, index, func(sw *snapshot.SnapshotWriter) error { return snap.WriteTo(sw.Add) })
	}, nil
}

// Restore replaces the core with a snapshot's state: as Raft starts, or
// when the leader sends a follower that fell behind its snapshot.
func (a *clusterApp) Restore(r io.Reader) error {
	cm := (*clusterMode)(a)
	s := cm.s
	fresh, err := s.newCore()
	if err != nil {
		return err
	}
	index, err := loadStream(fresh, r)
	if err != nil {
		return err
	}
	s.mu.Lock()
	cm.applied = index
	cm.swapCore(fresh)
	wakes := s.wakes.take(nil)
	s.mu.Unlock()
	wake(wakes)
	s.log.Info("state restored from a raft snapshot", "index", index)
	return nil
}

// newCore makes an empty core like the first.
func (s *Server) newCore() (*core.Core, error) { return core.New(s.cfg.Core, s.gate) }

// clusterOps is core.Cluster on the server's Raft.
type clusterOps struct{ s *Server }

// Status reads Raft's view; it never waits on Raft.
func (o clusterOps) Status() (core.ClusterStatus, error) {
	cm := o.s.cl
	st, err := cm.node.Status(nil)
	if err != nil {
		return core.ClusterStatus{}, err
	}
	cs := core.ClusterStatus{ID: st.ID, Leader: st.Leader, Term: st.Term, CommitIndex: st.CommitIndex,
		AppliedIndex: st.AppliedIndex, Role: core.RoleFollower}
	switch st.Role {
	case "leader":
		cs.Role = core.RoleLeader
	case "candidate":
		cs.Role = core.RoleCandidate
	}
	for _, m := range st.Members {
		cs.Members = append(cs.Members, core.ClusterMember{ID: m.ID, Raft: m.Raft, Voter: m.Voter,
			MatchIndex: m.MatchIndex, Lag: m.Lag, HasMatch: m.Known})
	}
	return cs, nil
}

// Change runs a membership change or a transfer on its own goroutine,
// as it waits on Raft, and answers through the core.
func (o clusterOps) Change(peer core.PeerID, req string, ch core.ClusterChange) {
	s, cm := o.s, o.s.cl
	var answered chan struct{}
	if ch.Kind == wire.KindClusterRemove && ch.ID == cm.id {
		answered = make(chan struct{})
		cm.removals = append(cm.removals, answered)
	}
	go func() {
		if answered != nil {
			defer close(answered)
		}
		var err error
		switch ch.Kind {
		case wire.KindClusterAdd:
			err = cm.node.Add(cluster.Member{ID: ch.ID, Raft: ch.Raft, Voter: ch.Voter})
		case wire.KindClusterRemove:
			err = cm.node.Remove(ch.ID)
		case wire.KindClusterTransfer:
			err = cm.node.Transfer(ch.ID)
		}
		code, msg := changeError(err)
		if err != nil {
			s.log.Warn("cluster change failed", "type", string(ch.Kind), "id", ch.ID, "err", err)
		} else {
			s.log.Info("cluster change done", "type", string(ch.Kind), "id", ch.ID)
		}
		s.mu.Lock()
		s.core.ClusterDone(peer, req, code, msg)
		wakes := s.wakes.take(nil)
		s.mu.Unlock()
		wake(wakes)
	}()
}

// changeError is the answer to a cluster change that ended with err.
// not_leader says nothing changed, so only a change never begun gets it.
// One under way when the leadership was lost may still commit.
func changeError(err error) (wire.Code, string) {
	switch {
	case err == nil:
		return "", ""
	case errors.Is(err, cluster.ErrNoMember):
		return wire.CodeBadRequest, err.Error()
	case errors.Is(err, raft.ErrNotLeader):
		return wire.CodeNotLeader, "not the leader: " + err.Error()
	case errors.Is(err, raft.ErrLeadershipLost):
		return wire.CodeUnavailable, "the leadership was lost during the change, which may have taken effect: " +
			"see cluster_status (" + err.Error() + ")"
	default:
		return wire.CodeUnavailable, "raft: " + err.Error()
	}
}
