package core

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/wire"
)

// TestCluster_SingleNodeDoesNotSpeakTheGroup pins section 8: a server
// that does not list a group answers its messages with unknown_type, and
// a single main control lists no cluster.
func TestCluster_SingleNodeDoesNotSpeakTheGroup(t *testing.T) {
	h := newHarness(t)
	p := h.open()
	h.send(p, "hello", "req", "h")
	ok := h.expect(p, "hello_ok")
	assert.False(t, ok.Has("role"))
	assert.False(t, ok.Has("leader"))
	for _, k := range []wire.Kind{wire.KindClusterStatus, wire.KindClusterAdd, wire.KindClusterRemove, wire.KindClusterTransfer} {
		h.send(p, string(k), "req", "r1", "id", "127.0.0.1:1", "raft", "127.0.0.1:2")
		m := h.expect(p, "error")
		assert.Equal(t, string(wire.CodeUnknownType), m.Value("code"), "%s", k)
		assert.Equal(t, "r1", m.Value("req"))
	}
	h.send(p, "stats", "req", "r2")
	h.expect(p, "stats") // the connection stays open
}

// TestCluster_WelcomeOfSingleNodeListsNoCluster: only a member lists it.
func TestCluster_WelcomeOfSingleNodeListsNoCluster(t *testing.T) {
	h := newHarness(t)
	h.next++
	h.c.Open(h.next)
	w, err := wire.ParseWelcome(h.expect(h.next, "welcome"))
	assert.NoError(t, err)
	assert.False(t, w.HasFeature(wire.FeatureCluster))
	assert.True(t, w.HasFeature(wire.FeatureRuns))
}

// fakeCluster is a Cluster the test scripts.
type fakeCluster struct {
	st      ClusterStatus
	changes []ClusterChange
	peers   []PeerID
	reqs    []string
}

func (f *fakeCluster) Status() (ClusterStatus, error) { return f.st, nil }
func (f *fakeCluster) Change(p PeerID, req string, ch ClusterChange) {
	f.changes = append(f.changes, ch)
	f.peers = append(f.peers, p)
	f.reqs = append(f.reqs, req)
}

func memberHarness(t *testing.T) (*harness, *fakeCluster) {
	fc := &fakeCluster{st: ClusterStatus{ID: "m1:1", Leader: "m2:1", Role: RoleFollower, Term: 4, CommitIndex: 10, AppliedIndex: 9,
		Members: []ClusterMember{{ID: "m1:1", Raft: "m1:2", Voter: true}, {ID: "m2:1", Raft: "m2:2", Voter: true, HasMatch: true, MatchIndex: 8, Lag: 2}}}}
	h := newHarness(t, func(c *Config) { c.Cluster = fc })
	return h, fc
}

func TestCluster_FollowerRefusesWithTheLeaderHint(t *testing.T) {
	h, _ := memberHarness(t)
	h.c.SetRole(RoleFollower, "m2:1")
	h.next++
	h.c.Open(h.next)
	w, err := wire.ParseWelcome(h.expect(h.next, "welcome"))
	assert.NoError(t, err)
	assert.True(t, w.HasFeature(wire.FeatureCluster))
	cl := h.next
	h.send(cl, "hello", "req", "h")
	ok := h.expect(cl, "hello_ok")
	assert.Equal(t, "follower", ok.Value("role"))
	assert.Equal(t, "m2:1", ok.Value("leader"))

	for _, typ := range []string{"submit", "query", "stats", "list", "run_submit", "schedule_list", "cluster_add"} {
		h.send(cl, typ, "req", "r-"+typ, "task_type", "t", "task_id", "1", "state", "pending", "id", "a:1", "raft", "a:2")
		m := h.expect(cl, "error")
		assert.Equal(t, string(wire.CodeNotLeader), m.Value("code"), typ)
		assert.Equal(t, "m2:1", m.Value("leader"), typ)
		assert.Equal(t, "r-"+typ, m.Value("req"), typ)
	}
	assert.Zero(t, h.c.tasks.count, "a refused submit changed nothing")
	assert.Empty(t, h.fx.records)
	// A request over 64 bytes of req is still bad_request first.
	h.send(cl, "submit", "req", string(make([]byte, 65)), "task_type", "t")
	assert.Equal(t, string(wire.CodeBadRequest), h.expect(cl, "error").Value("code"))

	// Without a known leader the hint is absent.
	h.c.SetRole(RoleCandidate, "")
	h.send(cl, "submit", "req", "r", "task_type", "t")
	m := h.expect(cl, "error")
	assert.Equal(t, string(wire.CodeNotLeader), m.Value("code"))
	assert.False(t, m.Has("leader"))

	// An executor is refused and closed; auth came first (none here).
	ex := h.open()
	h.send(ex, "register", "executor_id", "e1", "task_types", "t", "slots", "1")
	m = h.expect(ex, "error")
	assert.Equal(t, string(wire.CodeNotLeader), m.Value("code"))
	assert.True(t, h.fx.closed[ex])
	assert.Empty(t, h.c.execs)
}

func TestCluster_StatusOnAnyMember(t *testing.T) {
	h, _ := memberHarness(t)
	h.c.SetRole(RoleFollower, "m2:1")
	cl := h.client()
	h.send(cl, "cluster_status", "req", "s")
	m := h.expect(cl, "cluster_status_ok")
	for k, v := range map[string]string{"req": "s", "id": "m1:1", "role": "follower", "leader": "m2:1", "term": "4",
		"commit_index": "10", "applied_index": "9", "count": "2", "member.0.id": "m1:1", "member.0.raft": "m1:2",
		"member.0.voter": "true", "member.1.match_index": "8", "member.1.lag": "2"} {
		assert.Equal(t, v, m.Value(k), k)
	}
	assert.False(t, m.Has("member.0.match_index"))
}

func TestCluster_ChangesNeedAdminAndLeader(t *testing.T) {
	h, fc := memberHarness(t)
	h.c.SetRole(RoleLeader, "m1:1")
	cl := h.client()
	h.send(cl, "cluster_add", "req", "a", "id", "m3:1", "raft", "m3:2", "voter", "false")
	h.send(cl, "cluster_remove", "req", "b", "id", "m2:1")
	h.send(cl, "cluster_transfer", "req", "c")
	h.send(cl, "cluster_transfer", "req", "d", "id", "m2:1")
	h.none(cl)
	assert.Equal(t, []ClusterChange{{Kind: wire.KindClusterAdd, ID: "m3:1", Raft: "m3:2"},
		{Kind: wire.KindClusterRemove, ID: "m2:1"}, {Kind: wire.KindClusterTransfer},
		{Kind: wire.KindClusterTransfer, ID: "m2:1"}}, fc.changes)
	h.c.ClusterDone(cl, "a", "", "")
	assert.Equal(t, "a", h.expect(cl, "cluster_ok").Value("req"))
	h.c.ClusterDone(cl, "b", wire.CodeUnavailable, "no majority")
	assert.Equal(t, string(wire.CodeUnavailable), h.expect(cl, "error").Value("code"))
	h.c.ClusterDone(99, "x", "", "") // gone: nothing

	for _, kv := range [][]string{{"cluster_add", "raft", "m3:2"}, {"cluster_add", "id", "m3:1"},
		{"cluster_add", "id", "nope", "raft", "m3:2"}, {"cluster_remove"}, {"cluster_add", "id", "a:1", "raft", "b:1", "voter", "maybe"}} {
		h.send(cl, kv[0], append([]string{"req", "v"}, kv[1:]...)...)
		assert.Equal(t, string(wire.CodeBadRequest), h.expect(cl, "error").Value("code"), "%v", kv)
	}
}

func TestCluster_ChangesNeedTheAdminProof(t *testing.T) {
	fc := &fakeCluster{}
	h := newHarness(t, func(c *Config) { c.Cluster = fc; c.AdminToken = []byte("admin-secret") })
	cl := h.client()
	h.send(cl, "cluster_transfer", "req", "t")
	assert.Equal(t, string(wire.CodeNotPermitted), h.expect(cl, "error").Value("code"))
	assert.Empty(t, fc.changes)
}

func TestCluster_FollowerDoesNotTick(t *testing.T) {
	h, _ := memberHarness(t)
	cl := h.client()
	ex := h.executor("e1", "t", 1)
	h.submit(cl, "task_type", "t", "timeout_ms", "1000")
	h.expect(ex, "task")
	records := len(h.fx.records)
	h.c.SetRole(RoleFollower, "m2:1")
	h.advance(time.Hour)
	assert.Len(t, h.fx.records, records, "no timeout, loss or retention fired on a follower")
}

// TestCluster_NewLeaderNeverRepeatsAnOldLeadersVersion pins the epoch
// rule across leaders: a leader of term T uses epoch base+T. The old
// leader's dispatch that never committed has a version the new leader
// can never hand out, so its result is stale, not accepted.
func TestCluster_NewLeaderNeverRepeatsAnOldLeadersVersion(t *testing.T) {
	old, _ := memberHarness(t)
	require.NoError(t, old.c.BeginLeaderEpoch(2))
	cl := old.client()
	id := old.submit(cl, "task_type", "t")
	committed := len(old.fx.records) // what a majority holds
	ex := old.executor("e1", "t", 1)
	oldVersion, err := old.expect(ex, "task").Uint("version")
	require.NoError(t, err)

	// The new leader (term 3) holds only the committed records.
	nw, _ := memberHarness(t)
	for i, r := range old.fx.records[:committed] {
		require.NoError(t, nw.c.ReplayRecord(r), "record %d", i)
	}
	require.Error(t, nw.c.BeginLeaderEpoch(2), "an epoch at or below a committed one is refused")
	require.NoError(t, nw.c.BeginLeaderEpoch(3))
	ex2 := nw.executor("e1", "t", 1)
	newVersion, err := nw.expect(ex2, "task").Uint("version")
	require.NoError(t, err)
	assert.Greater(t, newVersion, uint64(3)<<32)
	assert.LessOrEqual(t, oldVersion, uint64(3)<<32, "every version of term 2 lies below term 3's")
	assert.NotEqual(t, oldVersion, newVersion)

	// The old leader's result is stale on the new one.
	nw.send(ex2, "result", "task_id", fmt.Sprint(id), "version", fmt.Sprint(oldVersion), "status", "succeeded")
	ack := nw.expect(ex2, "result_ack")
	assert.Equal(t, "false", ack.Value("accepted"))
	assert.Equal(t, string(wire.ReasonStale), ack.Value("reason"))
}

// A change runs on another goroutine after Handle returns, while the
// read buffer the message borrowed takes the next frames: the change
// must own its kind, as it owns its id.
func TestCluster_ChangeOwnsItsKind(t *testing.T) {
	h, fc := memberHarness(t)
	h.c.SetRole(RoleLeader, "m1:1")
	cl := h.client()
	buf, err := wire.AppendFrame(nil, msg("cluster_transfer", "req", "t", "id", "m2:1"))
	require.NoError(t, err)
	m, _, err := wire.NewDecoder(0).Decode(buf)
	require.NoError(t, err)
	h.c.Handle(cl, m)
	for i := range buf {
		buf[i] = 'x'
	}
	require.Len(t, fc.changes, 1)
	assert.Equal(t, ClusterChange{Kind: wire.KindClusterTransfer, ID: "m2:1"}, fc.changes[0])
}
