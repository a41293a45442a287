package cluster

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/internal/patience"
	"github.com/apollo11/apollo11/snapshot"
)

// listApp keeps the records applied, in order.
type listApp struct {
	mu    sync.Mutex
	recs  []string
	index uint64
}

func (a *listApp) Apply(index uint64, b Batch) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, r := range b.Records {
		a.recs = append(a.recs, string(r))
	}
	a.index = index
	return nil
}

func (a *listApp) Snapshot() (func(w io.Writer) error, error) {
	a.mu.Lock()
	recs, index := append([]string(nil), a.recs...), a.index
	a.mu.Unlock()
	return func(w io.Writer) error {
		return snapshot.WriteStream(w, index, func(sw *snapshot.SnapshotWriter) error {
			for _, r := range recs {
				if err := sw.Add([]byte(r)); err != nil {
					return err
				}
			}
			return nil
		})
	}, nil
}

func (a *listApp) Restore(r io.Reader) error {
	var recs []string
	index, err := snapshot.ReadStream(r, func(p []byte) error { recs = append(recs, string(p)); return nil })
	if err != nil {
		return err
	}
	a.mu.Lock()
	a.recs, a.index = recs, index
	a.mu.Unlock()
	return nil
}

// load starts the state over from a snapshot, or empty: as Committed's load.
func (a *listApp) load(r io.Reader) (uint64, error) {
	if r == nil {
		a.mu.Lock()
		a.recs, a.index = nil, 0
		a.mu.Unlock()
		return 0, nil
	}
	if err := a.Restore(r); err != nil {
		return 0, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.index, nil
}

// applied is the Raft index of the last command applied.
func (a *listApp) applied() uint64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.index
}

func (a *listApp) list() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.recs...)
}

func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().String()
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// loaded stretches Raft's default timeouts with the host's load. A
// leader steps down when no quorum answered within half its heartbeat
// timeout, 200 ms by default, and a busy host running -race delays
// heartbeats that long by scheduling alone.
func loaded(cfg Config) Config {
	cfg.HeartbeatTimeout = patience.Scale(DefaultHeartbeatTimeout)
	cfg.ElectionTimeout = patience.Scale(DefaultElectionTimeout)
	return cfg
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(patience.Scale(20 * time.Second)) // as Raft's timeouts (loaded)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestNode_ThreeMembersReplicateAndFailOver(t *testing.T) {
	dir := t.TempDir()
	var members []Member
	for i := range 3 {
		members = append(members, Member{ID: fmt.Sprintf("client-%d:1", i), Raft: freeAddr(t), Voter: true})
	}
	nodes := make([]*Node, 3)
	apps := make([]*listApp, 3)
	for i, m := range members {
		apps[i] = &listApp{}
		n, err := Start(loaded(Config{ID: m.ID, RaftAddr: m.Raft, Members: members, Dir: filepath.Join(dir, fmt.Sprint(i)),
			Logger: quiet(), SnapshotThreshold: 4}), apps[i])
		require.NoError(t, err)
		nodes[i] = n
	}
	defer func() {
		for _, n := range nodes {
			if n != nil {
				_ = n.Close()
			}
		}
	}()
	leader := func() int {
		for i, n := range nodes {
			if n != nil && n.IsLeader() {
				return i
			}
		}
		return -1
	}
	waitFor(t, "a leader", func() bool { return leader() >= 0 })
	l := leader()
	durable, failed := make(chan uint64, 100), make(chan error, 100)
	p := NewProposer(nodes[l].Raft(), func(lsn uint64) { durable <- lsn }, func(_ uint64, err error) { failed <- err })
	p.Lead(Origin{ID: nodes[l].ID(), Term: nodes[l].Term()})
	var last uint64
	for i := range 20 {
		last = p.Append([]byte(fmt.Sprintf("r%d", i)))
	}
	awaitDurable(t, durable, failed, last)
	p.Close()
	for i := range apps {
		waitFor(t, "replication", func() bool { return len(apps[i].list()) == 20 })
	}
	st, err := nodes[l].Status(nil)
	require.NoError(t, err)
	assert.Equal(t, "leader", st.Role)
	assert.Equal(t, members[l].ID, st.Leader)
	assert.Len(t, st.Members, 3)

	// The leader goes; another is elected and carries on the same log.
	require.NoError(t, nodes[l].Close())
	nodes[l] = nil
	waitFor(t, "a new leader", func() bool { return leader() >= 0 })
	nl := leader()
	require.NoError(t, nodes[nl].Barrier(5*time.Second))
	p = NewProposer(nodes[nl].Raft(), func(lsn uint64) { durable <- lsn }, func(_ uint64, err error) { failed <- err })
	p.Lead(Origin{ID: nodes[nl].ID(), Term: nodes[nl].Term()})
	last = p.Append([]byte("after"))
	awaitDurable(t, durable, failed, last)
	p.Close()
	assert.Equal(t, "after", apps[nl].list()[20])

	// The committed state reads back from the snapshot and the log. The
	// app's own index is the bound: Raft hands a batch to the FSM over a
	// buffered channel and only then sets AppliedIndex, so the FSM may
	// answer the entry's future first.
	var rebuilt listApp
	require.NoError(t, nodes[nl].Committed(apps[nl].applied(), rebuilt.load, rebuilt.Apply))
	assert.Equal(t, apps[nl].list(), rebuilt.list())
}

func TestParseMembers(t *testing.T) {
	ms, err := ParseMembers("127.0.0.1:7001=127.0.0.1:8001,h:2=h:3")
	require.NoError(t, err)
	assert.Equal(t, []Member{{ID: "127.0.0.1:7001", Raft: "127.0.0.1:8001", Voter: true}, {ID: "h:2", Raft: "h:3", Voter: true}}, ms)
	for _, bad := range []string{"", "a", "a=b", "h:1=", "h:1=h:2,h:1=h:3", "h:1=h:2,h:3=h:2"} {
		_, err := ParseMembers(bad)
		assert.Error(t, err, "%q", bad)
	}
}

// awaitDurable waits until last is durable. An entry that fails (the
// leadership moved, as it may on a loaded host) fails the test rather
// than leave it waiting for an LSN that never comes.
func awaitDurable(t *testing.T, durable <-chan uint64, failed <-chan error, last uint64) {
	t.Helper()
	for got := uint64(0); got < last; {
		select {
		case got = <-durable:
		case err := <-failed:
			t.Fatalf("an entry did not commit: %v", err)
		case <-time.After(30 * time.Second):
			t.Fatalf("LSN %d not durable within 30 s", last)
		}
	}
}

// Raft's pipelined replication can wedge a leader's replication to one
// follower for good, and then Raft's Shutdown waits forever (node.go).
// The transport refuses pipelines, so Raft falls back to one
// AppendEntries at a time. A pipeline would dial the peer instead.
func TestNode_NoPipelinedReplication(t *testing.T) {
	self := Member{ID: "client-0:1", Raft: freeAddr(t), Voter: true}
	n, err := Start(Config{ID: self.ID, RaftAddr: self.Raft, Members: []Member{self}, Dir: t.TempDir(), Logger: quiet()}, &listApp{})
	require.NoError(t, err)
	defer func() { assert.NoError(t, n.Close()) }()
	peer := freeAddr(t) // nothing listens there
	_, err = n.trans.AppendEntriesPipeline("client-1:1", raft.ServerAddress(peer))
	require.ErrorIs(t, err, raft.ErrPipelineReplicationNotSupported)
}
