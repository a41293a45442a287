package maincontrol

import (
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/apollo11/apollo11/cluster"
	"github.com/apollo11/apollo11/internal/tlsfiles"
	"github.com/apollo11/apollo11/maincontrol/core"
)

// barrierWait bounds one try of a new leader's wait for Raft to apply
// what is committed; it tries again while it leads.
const barrierWait = time.Second

// clusterMode is the server's replication, when Config.RaftListen is
// set (protocol section 8.13). The core stays the one state: a follower
// keeps it by replaying committed entries; the leader makes records, the
// proposer commits them, and the frames they gate go out once committed.
type clusterMode struct {
	s    *Server
	id   string // this member's id: its client address
	node *cluster.Node
	prop *cluster.Proposer

	// Under Server.mu. leadTerm is the term this member leads and has
	// begun (0: not leading); entries of that term from this member are
	// already in the core. applied is the last Raft index applied to the
	// core. ownLSN is the last LSN of this leadership's entries applied:
	// the core holds uncommitted changes while the gate's lastLSN is above.
	leadTerm, applied, ownLSN uint64
	// removals close once the leader's removals of itself are answered.
	// A stepdown waits for them: the reply comes before the close.
	removals []chan struct{}
	// ledTerm is the last term this member began leading: a term gets
	// one epoch. leadGen is the proposer's number for this leadership.
	// poisoned: an entry of it failed, so nothing may be released until
	// the stepdown rebuilt the core. epochDone closes once epochLSN is
	// durable.
	ledTerm, leadGen, epochLSN uint64
	poisoned                   bool
	epochDone                  chan struct{}
	failed                     chan struct{} // a proposal failed: step down

	snap  snapWait       // under Server.mu
	later sync.WaitGroup // snapshotLater, which close waits for

	fatal chan error // a state that cannot go on: the server stops
	stop  chan struct{}
	done  chan struct{}
	lead  atomic.Bool // serving as leader, for the metrics and tests
}

// handOffWait bounds a stopping leader's handoff, well within a service
// manager's stop timeout.
const handOffWait = 3 * time.Second

// memberID is the id clients know this member by: --advertise, or else
// its listen address. Followers name the leader by it, and clients follow
// only names in their own lists, so it must be an address clients dial.
// An empty or unspecified host is none: it is refused.
func memberID(listen, advertise string) (string, error) {
	if advertise != "" {
		if dialable(advertise) {
			return advertise, nil
		}
		return "", fmt.Errorf("%w: --advertise %q is this member's id, the address clients dial to reach it: give a host and port they can dial (such as a.example:1969 or 10.0.0.1:1969)",
			ErrConfig, advertise)
	}
	if _, rest, ok := strings.Cut(listen, "://"); ok {
		listen = rest
	}
	if dialable(listen) {
		return listen, nil
	}
	return "", fmt.Errorf("%w: in cluster mode --listen %q is this member's id, the address clients dial to reach it, so it needs a host clients can dial: listen on that address (such as --listen a.example:1969 or 10.0.0.1:1969), not on all interfaces, or name it with --advertise",
		ErrConfig, listen)
}

// dialable reports whether addr is a host and a numeric port, 1 to
// 65535, that a client can dial. Clients refuse named ports and port 0 in
// their lists, so a hint naming one could never be followed.
func dialable(addr string) bool {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || host == "" || net.ParseIP(host).IsUnspecified() {
		return false
	}
	p, err := strconv.Atoi(port)
	return err == nil && p >= 1 && p <= 65535
}

// startCluster starts Raft on DATADIR/raft. Raft restores its newest
// snapshot into the core before this returns. The member serves as a
// follower until it is elected.
func (s *Server) startCluster() error {
	if s.cfg.DataDir == "" {
		return fmt.Errorf("%w: cluster mode (--raft-listen) needs a --data-dir", ErrConfig)
	}
	if err := checkDataDir(s.cfg.DataDir); err != nil {
		return err
	}
	id, err := memberID(s.cfg.Listen, s.cfg.Advertise)
	if err != nil {
		return err
	}
	cm := &clusterMode{s: s, id: id, fatal: make(chan error, 1),
		stop: make(chan struct{}), done: make(chan struct{}), failed: make(chan struct{}, 1)}
	s.cl = cm
	s.core.SetRole(core.RoleFollower, "")
	if !s.cfg.RaftTLS.Empty() {
		l, err := tlsfiles.Load(s.cfg.RaftTLS, s.log)
		if err != nil {
			return fmt.Errorf("raft TLS: %w", err)
		}
		s.raftTLS = l
	}
	node, err := cluster.Start(cluster.Config{ID: cm.id, RaftAddr: s.cfg.RaftListen, Members: s.cfg.ClusterMembers, TLS: s.raftTLS,
		Dir: filepath.Join(s.cfg.DataDir, "raft"), HeartbeatTimeout: s.cfg.RaftHeartbeatTimeout,
		ElectionTimeout: s.cfg.RaftElectionTimeout, SnapshotThreshold: s.cfg.RaftSnapshotThreshold,
		TrailingLogs: s.cfg.RaftTrailingLogs,
		Stores:       s.cfg.RaftStores, Logger: s.log}, (*clusterApp)(cm))
	if err != nil {
		return err
	}
	prop := cluster.NewProposer(node.Raft(), cm.onDurable, cm.proposalFailed)
	s.mu.Lock() // Raft may apply entries already
	cm.node, cm.prop = node, prop
	s.gate.store = prop
	s.mu.Unlock()
	s.log.Info("cluster member started", "id", cm.id, "raft", s.cfg.RaftListen, "dir", filepath.Join(s.cfg.DataDir, "raft"))
	go cm.watchLeadership()
	return nil
}

// onDurable releases the frames of committed records, unless an entry
// of this leadership failed: then its frames wait for the stepdown.
func (cm *clusterMode) onDurable(lsn uint64) {
	s := cm.s
	s.mu.Lock()
	if !cm.poisoned && s.gate.release(lsn) {
		s.core.Durable(lsn)
	}
	if cm.epochDone != nil && !cm.poisoned && s.gate.durableLSN >= cm.epochLSN {
		close(cm.epochDone)
		cm.epochDone = nil
	}
	wakes := s.wakes.take(nil)
	s.mu.Unlock()
	wake(wakes)
}

// proposalFailed runs when an entry could not commit: the leadership is
// lost. Its frames stay held; the stepdown drops them and rebuilds the
// core, even if Raft elected this member again meanwhile.
func (cm *clusterMode) proposalFailed(gen uint64, err error) {
	s := cm.s
	s.mu.Lock()
	current := cm.leadTerm != 0 && gen == cm.leadGen
	if current {
		cm.poisoned = true
		cm.prop.Lead(cluster.Origin{})
	}
	s.mu.Unlock()
	s.log.Warn("a change could not commit: leadership lost", "err", err, "current", current)
	if current {
		select {
		case cm.failed <- struct{}{}:
		default:
		}
	}
}

// watchLeadership follows Raft's leadership changes, one at a time.
func (cm *clusterMode) watchLeadership() {
	defer close(cm.done)
	ch := cm.node.LeaderCh()
	hint := time.NewTicker(100 * time.Millisecond)
	defer hint.Stop()
	// Leader changes, as soon as Raft sees them, for the followers' hint.
	seen := make(chan raft.Observation, 4)
	obs := raft.NewObserver(seen, false, func(o *raft.Observation) bool {
		_, ok := o.Data.(raft.LeaderObservation)
		return ok
	})
	cm.node.Raft().RegisterObserver(obs)
	defer cm.node.Raft().DeregisterObserver(obs)
	for {
		select {
		case <-cm.stop:
			return
		case <-seen:
			cm.refreshHint()
		case <-cm.failed:
			if !cm.isPoisoned() {
				continue // a stepdown came first: this leadership is new
			}
			cm.stepDown()
			if cm.node.IsLeader() {
				cm.becomeLeader()
			}
		case leader := <-ch:
			if leader && cm.leadsTerm(cm.node.Term()) {
				continue // a late notice: this leadership goes on
			}
			if cm.leading() {
				// Lost, and maybe gained again since: the core may hold
				// changes that never committed.
				cm.stepDown()
			}
			if leader {
				cm.becomeLeader()
			}
		case <-hint.C:
			cm.refreshHint()
		}
	}
}

func (cm *clusterMode) leading() bool {
	cm.s.mu.Lock()
	defer cm.s.mu.Unlock()
	return cm.leadTerm != 0 || cm.poisoned
}

func (cm *clusterMode) isPoisoned() bool {
	cm.s.mu.Lock()
	defer cm.s.mu.Unlock()
	return cm.poisoned
}

// leadsTerm reports whether this member serves term's leadership, with
// no failed entry. Raft never elects a member twice in one term.
func (cm *clusterMode) leadsTerm(term uint64) bool {
	cm.s.mu.Lock()
	defer cm.s.mu.Unlock()
	return cm.leadTerm == term && !cm.poisoned && cm.node.IsLeader()
}

// refreshHint keeps a follower's leader hint and role current.
func (cm *clusterMode) refreshHint() {
	s := cm.s
	s.mu.Lock()
	defer s.mu.Unlock()
	cm.followerRole()
}

// followerRole sets a follower's role and hint from Raft. Under s.mu.
func (cm *clusterMode) followerRole() {
	s := cm.s
	if cm.node == nil || cm.leadTerm != 0 || s.core.Role() == core.RoleLeader {
		return
	}
	role := core.RoleFollower
	if cm.node.Raft().State() == raft.Candidate {
		role = core.RoleCandidate
	}
	s.core.SetRole(role, cm.node.Leader())
}

// becomeLeader waits until every committed entry is applied, begins the
// leadership's epoch, waits for it to commit, then serves. It gives up
// only when the leadership is lost, fails or the server stops.
func (cm *clusterMode) becomeLeader() {
	s := cm.s
	// An entry taken under an older origin reaches Raft before the
	// barrier, so the barrier applies it before this leadership begins.
	cm.prop.Settle()
	for {
		stopped, err := cm.barrier()
		if stopped {
			return
		}
		if err == nil {
			break
		}
		if !cm.node.IsLeader() {
			return
		}
		s.log.Warn("elected, but the log is not applied yet: waiting", "err", err)
	}
	term := cm.node.Term()
	s.mu.Lock()
	if !cm.node.IsLeader() || s.stopping || cm.poisoned {
		s.mu.Unlock()
		return
	}
	if term <= cm.ledTerm {
		// This term's epoch is spent: a fresh one needs a new term.
		s.mu.Unlock()
		s.log.Warn("stepped down within a term: handing the leadership on", "term", term)
		if err := cm.node.Transfer(""); err != nil {
			s.log.Warn("leadership transfer failed: not serving in this term", "term", term, "err", err)
		}
		return
	}
	cm.leadTerm, cm.ledTerm, cm.ownLSN = term, term, s.gate.lastLSN
	cm.leadGen = cm.prop.Lead(cluster.Origin{ID: cm.id, Term: term})
	err := s.core.BeginLeaderEpoch(term)
	done := make(chan struct{})
	cm.epochLSN, cm.epochDone = s.gate.lastLSN, done
	if s.gate.durableLSN >= cm.epochLSN {
		close(done)
		cm.epochDone = nil
	}
	s.mu.Unlock()
	if err != nil {
		cm.fail(fmt.Errorf("cannot begin the leader's epoch: %w", err))
		return
	}
	check := time.NewTicker(50 * time.Millisecond)
	defer check.Stop()
	for waiting := true; waiting; {
		select {
		case <-done:
			waiting = false
		case <-cm.stop:
			return
		case <-check.C:
			s.mu.Lock()
			lost := cm.leadTerm != term || cm.poisoned
			s.mu.Unlock()
			if lost || !cm.node.IsLeader() {
				return // the stepdown follows from Raft or the failure
			}
		}
	}
	s.mu.Lock()
	serving := cm.leadTerm == term && !cm.poisoned && cm.node.IsLeader()
	if serving {
		s.core.SetRole(core.RoleLeader, cm.id)
		cm.lead.Store(true)
		s.wantTick()
	}
	s.mu.Unlock()
	if serving {
		s.log.Info("leading the cluster", "id", cm.id, "term", term, "epoch", term, "applied_index", cm.node.Raft().AppliedIndex())
	}
}

// handOff passes a leader's leadership to the most up-to-date voter, so
// clients wait for one round trip instead of an election timeout. The
// connections are closed by now, so nothing new can be proposed. Raft
// may take two election timeouts; the stop waits at most handOffWait.
func (cm *clusterMode) handOff() {
	if !cm.node.IsLeader() {
		return
	}
	done := make(chan error, 1)
	go func() { done <- cm.node.Transfer("") }()
	select {
	case err := <-done:
		if err != nil {
			// Usually no voter is up to take it, as when a whole cluster
			// stops: an election follows once one is, as after a kill.
			cm.s.log.Info("stopping: could not hand the leadership on", "err", err)
			return
		}
		cm.s.log.Info("stopping: leadership handed on")
	case <-time.After(handOffWait):
		// Raft's shutdown ends the transfer.
		cm.s.log.Warn("stopping: the leadership handoff did not finish in time", "waited", handOffWait)
	}
}

// barrier waits for Raft to apply what is committed, or for a stop.
// barrierWait bounds only the barrier's start: once sent, it waits for a
// quorum or for the lease to end. A leader left without a quorum keeps
// its lease for half the heartbeat timeout, and a stop must not wait
// that long. Raft's shutdown ends the barrier left behind.
func (cm *clusterMode) barrier() (stopped bool, err error) {
	done := make(chan error, 1)
	go func() { done <- cm.node.Barrier(barrierWait) }()
	select {
	case err := <-done:
		return false, err
	case <-cm.stop:
		return true, nil
	}
}

// stepDown ends a leadership: every connection closes, no held frame is
// sent, and the core is rebuilt from what is committed.
func (cm *clusterMode) stepDown() {
	s := cm.s
	s.mu.Lock()
	removals := cm.removals
	cm.removals = nil
	s.mu.Unlock()
	for _, done := range removals {
		select { // Raft answers the change once it committed or failed
		case <-done:
		case <-cm.stop:
		}
	}
	s.mu.Lock()
	term := cm.leadTerm
	cm.leadTerm, cm.poisoned, cm.epochDone = 0, false, nil
	cm.taken() // a wait for this term's commit ends with it
	cm.lead.Store(false)
	cm.prop.Lead(cluster.Origin{})
	s.core.SetRole(core.RoleFollower, cm.node.Leader())
	err := cm.rebuild()
	applied := cm.applied // Raft's FSM goroutine sets it under s.mu
	wakes := s.wakes.take(nil)
	s.mu.Unlock()
	wake(wakes)
	if err != nil {
		cm.fail(fmt.Errorf("cannot rebuild the state after losing the leadership: %w", err))
		return
	}
	s.log.Warn("leadership lost: connections closed, state rebuilt from the committed log", "term", term,
		"applied_index", applied)
}

// rebuild replaces the core with one made from the committed state up
// to the last index applied, and closes every connection. Under s.mu.
func (cm *clusterMode) rebuild() error {
	fresh, err := committedCore(cm.node, cm.applied, cm.s.newCore)
	if err != nil {
		return err
	}
	cm.swapCore(fresh)
	return nil
}

// swapCore puts c in the old core's place and closes every connection,
// whose peers the new core does not know. Under s.mu.
func (cm *clusterMode) swapCore(c *core.Core) {
	s := cm.s
	s.gate.dropAll()
	role, leader := s.core.Role(), ""
	if cm.node != nil { // nil: raft restores its snapshot as it starts
		leader = cm.node.Leader()
	}
	if role == core.RoleLeader {
		role = core.RoleFollower
	}
	c.SetRole(role, leader)
	if s.policies != nil {
		if err := c.SetPolicies(*s.policies); err != nil {
			s.log.Warn("policies not applied to the rebuilt state", "err", err)
		}
	}
	s.core = c
}

// fail stops the server: its state can no longer follow the log.
func (cm *clusterMode) fail(err error) {
	select {
	case cm.fatal <- err:
	default:
	}
}

// close stops following, hands a leadership on, then stops Raft and the
// proposer.
func (cm *clusterMode) close() {
	close(cm.stop)
	<-cm.done
	cm.handOff()
	if err := cm.node.Close(); err != nil {
		cm.s.log.Warn("raft did not stop cleanly", "err", err)
	}
	cm.later.Wait()
	cm.prop.Close()
}
