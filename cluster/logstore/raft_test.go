package logstore

import (
	"encoding/binary"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// sumFSM adds up the numbers of committed entries.
type sumFSM struct {
	mu       sync.Mutex
	sum, n   uint64
	restored bool
}

func (f *sumFSM) Apply(l *raft.Log) any {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sum += binary.BigEndian.Uint64(l.Data)
	f.n++
	return nil
}

func (f *sumFSM) state() (uint64, uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.sum, f.n
}

func (f *sumFSM) Snapshot() (raft.FSMSnapshot, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return sumSnap{f.sum, f.n}, nil
}

func (f *sumFSM) Restore(r io.ReadCloser) error {
	defer r.Close()
	var b [16]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sum, f.n = binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:])
	f.restored = true
	return nil
}

type sumSnap struct{ sum, n uint64 }

func (s sumSnap) Persist(sink raft.SnapshotSink) error {
	b := binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(nil, s.sum), s.n)
	if _, err := sink.Write(b); err != nil {
		sink.Cancel()
		return err
	}
	return sink.Close()
}

func (sumSnap) Release() {}

// node is one raft member on a Store.
type node struct {
	id    raft.ServerID
	dir   string
	store *Store
	fsm   *sumFSM
	snaps raft.SnapshotStore
	trans *raft.InmemTransport
	r     *raft.Raft
}

func raftConfig(id raft.ServerID) *raft.Config {
	c := raft.DefaultConfig()
	c.LocalID = id
	c.HeartbeatTimeout = 100 * time.Millisecond
	c.ElectionTimeout = 100 * time.Millisecond
	c.LeaderLeaseTimeout = 100 * time.Millisecond
	c.CommitTimeout = 5 * time.Millisecond
	c.TrailingLogs = 20
	c.SnapshotThreshold = 1 << 30 // snapshots only when the test asks
	c.Logger = hclog.NewNullLogger()
	return c
}

func (n *node) start(t *testing.T) {
	t.Helper()
	n.store = openTest(t, n.dir)
	r, err := raft.NewRaft(raftConfig(n.id), n.fsm, n.store, n.store, n.snaps, n.trans)
	if err != nil {
		t.Fatalf("NewRaft %s: %v", n.id, err)
	}
	n.r = r
}

func (n *node) stop(t *testing.T) {
	t.Helper()
	if err := n.r.Shutdown().Error(); err != nil {
		t.Errorf("Shutdown %s: %v", n.id, err)
	}
	n.r = nil
	if err := n.store.Close(); err != nil {
		t.Errorf("Close %s: %v", n.id, err)
	}
}

// waitFor polls cond until it holds or a minute passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func leader(nodes []*node) *node {
	for _, n := range nodes {
		if n.r != nil && n.r.State() == raft.Leader {
			return n
		}
	}
	return nil
}

func apply(t *testing.T, nodes []*node, from, to uint64) {
	t.Helper()
	for i := from; i <= to; i++ {
		for {
			l := leader(nodes)
			if l == nil {
				time.Sleep(5 * time.Millisecond)
				continue
			}
			if err := l.r.Apply(binary.BigEndian.AppendUint64(nil, i), 10*time.Second).Error(); err == nil {
				break
			}
		}
	}
}

// TestRaft_ThreeNodesOnStore runs raft on the store: it replicates,
// compacts after a snapshot, restarts a follower that catches up from its
// own log, and elects a new leader whose log overwrites the others'.
func TestRaft_ThreeNodesOnStore(t *testing.T) {
	var nodes []*node
	var cfg raft.Configuration
	for i := range 3 {
		id := raft.ServerID(fmt.Sprintf("n%d", i))
		addr, trans := raft.NewInmemTransport(raft.ServerAddress(id))
		nodes = append(nodes, &node{id: id, dir: t.TempDir(), fsm: &sumFSM{}, snaps: raft.NewInmemSnapshotStore(), trans: trans})
		cfg.Servers = append(cfg.Servers, raft.Server{ID: id, Address: addr, Suffrage: raft.Voter})
	}
	for _, a := range nodes {
		for _, b := range nodes {
			if a != b {
				a.trans.Connect(b.trans.LocalAddr(), b.trans)
			}
		}
	}
	for _, n := range nodes {
		n.start(t)
		defer func() {
			if n.r != nil {
				n.stop(t)
			}
		}()
	}
	if err := nodes[0].r.BootstrapCluster(cfg).Error(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a leader", func() bool { return leader(nodes) != nil })

	const total = 300
	apply(t, nodes, 1, 100)
	// A snapshot compacts every member's log to its trailing entries.
	for _, n := range nodes {
		waitFor(t, "member "+string(n.id)+" to apply", func() bool { _, c := n.fsm.state(); return c >= 100 })
		if err := n.r.Snapshot().Error(); err != nil {
			t.Fatalf("Snapshot %s: %v", n.id, err)
		}
		if f, _ := n.store.FirstIndex(); f <= 1 {
			t.Fatalf("%s: FirstIndex %d after a snapshot, want compacted", n.id, f)
		}
	}
	// A follower restarts on its own log and catches up.
	f := nodes[0]
	if f == leader(nodes) {
		f = nodes[1]
	}
	f.stop(t)
	apply(t, nodes, 101, 200)
	f.fsm = &sumFSM{}
	f.start(t)
	// The leader stops; a new one takes over on its stored log. The old
	// leader comes back as a follower, and raft deletes any tail of its
	// log the others never committed.
	l := leader(nodes)
	l.stop(t)
	waitFor(t, "a new leader", func() bool { n := leader(nodes); return n != nil && n != l })
	apply(t, nodes, 201, 250)
	l.fsm = &sumFSM{}
	l.start(t)
	apply(t, nodes, 251, total)
	// A retried Apply may commit a number twice, so members must agree
	// with each other, holding at least every number once.
	waitFor(t, "members to converge", func() bool {
		s0, n0 := nodes[0].fsm.state()
		for _, n := range nodes[1:] {
			if s, c := n.fsm.state(); s != s0 || c != n0 {
				return false
			}
		}
		return n0 >= total && s0 >= total*(total+1)/2
	})
	// Every member's stored log agrees with the leader's where both hold entries.
	ld := leader(nodes)
	for _, n := range nodes {
		first, _ := n.store.FirstIndex()
		last, _ := n.store.LastIndex()
		for i := first; i <= last; i++ {
			var a, b raft.Log
			if err := n.store.GetLog(i, &a); err != nil {
				t.Fatalf("%s GetLog(%d): %v", n.id, i, err)
			}
			if ld.store.GetLog(i, &b) == nil && !sameLog(&a, &b) {
				t.Fatalf("%s entry %d differs from the leader's", n.id, i)
			}
		}
	}
}
