package maincontrol

import (
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/cluster"
	"github.com/apollo11/apollo11/internal/patience"
	"github.com/apollo11/apollo11/wire"
)

// heldLog keeps the leader's records from Raft, numbered as the proposer
// would number them, so the core holds changes not yet committed.
type heldLog struct {
	p    *cluster.Proposer
	recs [][]byte
}

func (h *heldLog) Append(payload []byte) uint64 {
	h.recs = append(h.recs, append([]byte(nil), payload...))
	return h.p.LastLSN() + uint64(len(h.recs))
}

// release proposes the held records, in order. Under s.mu.
func (h *heldLog) release(s *Server) {
	s.gate.store = h.p
	for _, r := range h.recs {
		h.p.Append(r)
	}
}

// leadSnapPeer is a client connection speaking the wire protocol.
type leadSnapPeer struct {
	t *testing.T
	c net.Conn
	r *wire.Reader
	w *wire.Writer
}

func dialLeadSnap(t *testing.T, addr string) *leadSnapPeer {
	c, err := net.DialTimeout("tcp", addr, patience.Scale(5*time.Second))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	p := &leadSnapPeer{t: t, c: c, r: wire.NewReader(c, 0), w: wire.NewWriter(c, 0)}
	p.expect("welcome")
	p.send("hello", "req", "h", "client", "test")
	p.expect("hello_ok")
	return p
}

func (p *leadSnapPeer) send(typ string, kv ...string) {
	m := wire.NewMessage(wire.Kind(typ))
	for i := 0; i+1 < len(kv); i += 2 {
		m.Set(kv[i], kv[i+1])
	}
	require.NoError(p.t, p.w.Send(m))
}

func (p *leadSnapPeer) expect(typ string) *wire.Message {
	require.NoError(p.t, p.c.SetReadDeadline(time.Now().Add(patience.Scale(10*time.Second))))
	m, err := p.r.ReadMessage()
	require.NoError(p.t, err)
	require.Equal(p.t, typ, m.Type(), "got %s", m)
	return m
}

// startMembers runs n cluster members in this process until the test ends.
// leaderOf waits for one of servers to serve as leader.
func leaderOf(t *testing.T, servers []*Server) *Server {
	t.Helper()
	deadline := time.Now().Add(patience.Scale(20 * time.Second))
	for {
		for _, s := range servers {
			if s.cl.lead.Load() {
				return s
			}
		}
		require.True(t, time.Now().Before(deadline), "no leader elected")
		time.Sleep(10 * time.Millisecond)
	}
}

// submitKeyed submits n keyed tasks one at a time and returns the ids
// confirmed.
func submitKeyed(t *testing.T, cl *leadSnapPeer, n int) []uint64 {
	t.Helper()
	var confirmed []uint64
	for i := range n {
		cl.send("submit", "req", fmt.Sprint(i), "task_type", "t", "key", fmt.Sprint("k", i))
		id, err := cl.expect("submitted").Uint("task_id")
		require.NoError(t, err)
		confirmed = append(confirmed, id)
	}
	return confirmed
}

func startMembers(t *testing.T, n int) []*Server { return startMembersWith(t, n, Config{}) }

// startMembersWith runs n members with base's Raft settings.
func startMembersWith(t *testing.T, n int, base Config) []*Server {
	dir := t.TempDir()
	var members []cluster.Member
	for range n {
		var addrs [2]string
		for i := range addrs {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(t, err)
			addrs[i] = ln.Addr().String()
			require.NoError(t, ln.Close())
		}
		members = append(members, cluster.Member{ID: addrs[0], Raft: addrs[1], Voter: true})
	}
	var servers []*Server
	for i, m := range members {
		cfg := loadedRaft(base)
		cfg.Listen, cfg.DataDir, cfg.RaftListen, cfg.ClusterMembers = m.ID, filepath.Join(dir, fmt.Sprint(i)), m.Raft, members
		servers = append(servers, runServer(t, cfg))
	}
	return servers
}

// The leader's core is always ahead of the log under load. Its Raft
// snapshot is still taken: the committed state at the snapshot's index,
// with every confirmed task and without the one not yet committed.
func TestCluster_LeaderAheadStillSnapshotsTheCommittedState(t *testing.T) {
	servers := startMembers(t, 3)
	l := leaderOf(t, servers)
	cl := dialLeadSnap(t, l.cl.id)
	confirmed := submitKeyed(t, cl, 5)
	hold, heldID := holdASubmit(t, l, cl, confirmed[len(confirmed)-1])

	// The snapshot waits for the commit, which never comes: past
	// snapshotWait it is taken from a shadow core.
	require.ErrorIs(t, l.cl.node.Raft().Snapshot().Error(), cluster.ErrSnapshotLater, "put off while ahead")
	rc := awaitRaftSnapshot(t, l)
	l.mu.Lock()
	assert.Equal(t, uint64(1), l.cl.snap.shadows, "taken from a shadow core")
	l.mu.Unlock()

	// A member restored from it holds exactly the committed state.
	fresh, err := l.newCore()
	require.NoError(t, err)
	index, err := loadStream(fresh, rc)
	require.NoError(t, rc.Close())
	require.NoError(t, err)
	assert.Positive(t, index)
	for _, id := range confirmed {
		_, ok := fresh.Task(id)
		assert.True(t, ok, "confirmed task %d is in the snapshot", id)
	}
	_, ok := fresh.Task(heldID)
	assert.False(t, ok, "the uncommitted task %d is not in the snapshot", heldID)

	// Released, the held record commits and its submit is confirmed.
	l.mu.Lock()
	hold.release(l)
	l.mu.Unlock()
	assert.Equal(t, strconv.FormatUint(heldID, 10), cl.expect("submitted").Value("task_id"))
}

// holdASubmit submits one task to the leader l and holds its record from
// Raft, so the core is ahead of the log. last is the last id confirmed.
func holdASubmit(t *testing.T, l *Server, cl *leadSnapPeer, last uint64) (*heldLog, uint64) {
	t.Helper()
	deadline := time.Now().Add(patience.Scale(20 * time.Second))
	hold := &heldLog{p: l.cl.prop}
	l.mu.Lock()
	l.gate.store = hold
	l.mu.Unlock()
	cl.send("submit", "req", "held", "task_type", "t", "key", "held")
	for {
		require.True(t, time.Now().Before(deadline), "the held submit never reached the core")
		l.mu.Lock()
		if l.core.NextTaskID() > last+1 {
			heldID := l.core.NextTaskID() - 1
			_, ok := l.core.Task(heldID)
			require.True(t, ok)
			require.Greater(t, l.gate.lastLSN, l.cl.ownLSN, "the leader's core is ahead of the log")
			l.mu.Unlock()
			return hold, heldID
		}
		l.mu.Unlock()
		time.Sleep(time.Millisecond)
	}
}

// awaitRaftSnapshot waits for the first Raft snapshot in l's store, and
// opens it.
func awaitRaftSnapshot(t *testing.T, l *Server) io.ReadCloser {
	t.Helper()
	snaps, err := raft.NewFileSnapshotStore(filepath.Join(l.cfg.DataDir, "raft"), 2, io.Discard)
	require.NoError(t, err)
	deadline := time.Now().Add(patience.Scale(20 * time.Second))
	for {
		metas, err := snaps.List()
		require.NoError(t, err)
		if len(metas) > 0 {
			_, rc, err := snaps.Open(metas[0].ID)
			require.NoError(t, err)
			return rc
		}
		require.True(t, time.Now().Before(deadline), "no raft snapshot taken")
		time.Sleep(10 * time.Millisecond)
	}
}
