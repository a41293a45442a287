package maincontrol

import (
	"errors"
	"time"

	"github.com/hashicorp/raft"

	"github.com/apollo11/apollo11/cluster"
)

// snapshotWait bounds how long a leader whose core is ahead of the commit
// puts off its Raft snapshot, waiting for the commit to catch up. The
// frozen core then serves, as on a follower. Past it the snapshot rebuilds
// the committed state in a shadow core: a second copy of the state, so
// the wait spares that memory when the load leaves gaps. Raft's log keeps
// growing on disk meanwhile.
const snapshotWait = 2 * time.Second

// snapWait is a leader's put-off snapshot, under Server.mu.
type snapWait struct {
	wait   time.Duration // zero: snapshotWait; the tests set it
	since  time.Time     // the first snapshot put off; zero: none
	caught chan struct{} // closes when the commit catches up the core
	later  bool          // snapshotLater runs
	// Counts, for the tests: snapshots of the frozen core, of a shadow
	// core, and snapshots put off.
	frozen, shadows, putOff uint64
}

// putOff says whether the snapshot asked now waits for the commit: the
// leader's core is ahead, and it has not waited snapshotWait yet. The
// first starts snapshotLater. Under Server.mu.
func (cm *clusterMode) putOff() bool {
	w := &cm.snap
	now := time.Now()
	if w.since.IsZero() {
		w.since = now
	}
	wait := w.wait
	if wait == 0 {
		wait = snapshotWait
	}
	if now.Sub(w.since) >= wait {
		return false
	}
	w.putOff++
	if !w.later {
		w.later = true
		cm.later.Add(1)
		go cm.snapshotLater(w.since.Add(wait))
	}
	return true
}

// taken ends a wait: a snapshot was taken. snapshotLater, woken, sees it
// and stops. Under Server.mu.
func (cm *clusterMode) taken() {
	cm.snap.since = time.Time{}
	cm.caughtUp()
}

// caughtUp tells snapshotLater the commit caught up the leader's core.
// Under Server.mu, on Raft's FSM goroutine.
func (cm *clusterMode) caughtUp() {
	if w := &cm.snap; w.caught != nil {
		close(w.caught)
		w.caught = nil
	}
}

// snapshotLater asks Raft for the snapshot put off, each time the commit
// catches up, until one is taken; at deadline the last try falls back to
// a shadow core. It gives up when Raft fails: its own interval retries.
func (cm *clusterMode) snapshotLater(deadline time.Time) {
	s := cm.s
	defer cm.later.Done()
	s.mu.Lock()
	defer s.mu.Unlock()
	// A put-off snapshot with no snapshotLater would wait for Raft's
	// interval: later is cleared with the last look, under one lock.
	defer func() { cm.snap.later = false }()
	for !cm.snap.since.IsZero() {
		if cm.snap.caught == nil {
			cm.snap.caught = make(chan struct{})
		}
		caught := cm.snap.caught
		s.mu.Unlock()
		t := time.NewTimer(time.Until(deadline))
		select {
		case <-caught:
		case <-t.C:
		case <-cm.stop:
		}
		t.Stop()
		if cm.stopped() {
			s.mu.Lock()
			return
		}
		var err error
		if !cm.takenSince() {
			err = cm.node.Raft().Snapshot().Error()
		}
		s.mu.Lock()
		if err != nil && !errors.Is(err, cluster.ErrSnapshotLater) {
			if !errors.Is(err, raft.ErrRaftShutdown) {
				s.log.Warn("raft snapshot failed", "err", err)
			}
			return
		}
	}
}

// takenSince says whether the wait ended: a snapshot was taken meanwhile,
// at Raft's own interval.
func (cm *clusterMode) takenSince() bool {
	cm.s.mu.Lock()
	defer cm.s.mu.Unlock()
	return cm.snap.since.IsZero()
}

// stopped reports whether the server is closing the cluster mode.
func (cm *clusterMode) stopped() bool {
	select {
	case <-cm.stop:
		return true
	default:
		return false
	}
}
