package maincontrol_test

import (
	"fmt"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/cluster"
	"github.com/apollo11/apollo11/internal/patience"
	"github.com/apollo11/apollo11/maincontrol"
	"github.com/apollo11/apollo11/maincontrol/maincontroltest"
	"github.com/apollo11/apollo11/wire"
)

// testCluster is n members in this process, on loopback.
type testCluster struct {
	t       *testing.T
	addrs   []string
	stops   []func() error
	configs []maincontrol.Config // as each member started
}

func startCluster(t *testing.T, n int) *testCluster {
	t.Helper()
	return startClusterWith(t, n, func(*maincontrol.Config) {})
}

// startClusterWith starts n members, each config changed by tweak.
func startClusterWith(t *testing.T, n int, tweak func(*maincontrol.Config)) *testCluster {
	t.Helper()
	dir := t.TempDir()
	tc := &testCluster{t: t}
	var members []cluster.Member
	for range n {
		members = append(members, cluster.Member{ID: freeAddr(t), Raft: freeAddr(t), Voter: true})
		tc.addrs = append(tc.addrs, members[len(members)-1].ID)
	}
	for i, m := range members {
		cfg := maincontrol.Config{Listen: m.ID, DataDir: filepath.Join(dir, fmt.Sprint(i)),
			RaftListen: m.Raft, ClusterMembers: members, Logger: testLogger()}
		tweak(&cfg)
		_, stop, err := maincontroltest.Launch(maincontrol.LoadedRaft(cfg))
		require.NoError(t, err)
		tc.stops = append(tc.stops, stop)
		tc.configs = append(tc.configs, cfg)
	}
	t.Cleanup(func() {
		for _, stop := range tc.stops {
			if stop != nil {
				assert.NoError(t, stop())
			}
		}
	})
	return tc
}

// leader waits for a member that says it leads, and returns its index.
func (tc *testCluster) leader() int {
	tc.t.Helper()
	deadline := time.Now().Add(patience.Scale(20 * time.Second))
	for time.Now().Before(deadline) {
		for i, a := range tc.addrs {
			if tc.stops[i] == nil {
				continue
			}
			if role, leader := helloRole(a); role == "leader" {
				require.Equal(tc.t, a, leader)
				return i
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	tc.t.Fatal("no leader elected")
	return -1
}

// helloRole asks a member for its role and leader. A member stepping
// down closes its connections: no role then, and the caller asks again.
func helloRole(addr string) (role, leader string) {
	c, err := net.DialTimeout("tcp", addr, patience.Scale(5*time.Second))
	if err != nil {
		return "", ""
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(patience.Scale(5 * time.Second)))
	r, w := wire.NewReader(c, 0), wire.NewWriter(c, 0)
	if m, err := r.ReadMessage(); err != nil || m.Type() != "welcome" {
		return "", ""
	}
	hello := wire.NewMessage("hello")
	hello.Set("req", "h")
	if w.Send(hello) != nil {
		return "", ""
	}
	ok, err := r.ReadMessage()
	if err != nil || ok.Type() != "hello_ok" {
		return "", ""
	}
	return ok.Value("role"), ok.Value("leader")
}

func TestCluster_FollowersRefuseAndANewLeaderKeepsWhatCommitted(t *testing.T) {
	tc := startCluster(t, 3)
	l := tc.leader()
	cl := clientPeer(t, tc.addrs[l])
	var ids []string
	for i := range 10 {
		cl.send("submit", "req", fmt.Sprint(i), "task_type", "t", "key", fmt.Sprint("k", i))
		m := cl.expect("submitted")
		ids = append(ids, m.Value("task_id"))
	}
	f := (l + 1) % 3
	fp := dialRaw(t, tc.addrs[f])
	fp.send("hello", "req", "h")
	ok := fp.expect("hello_ok")
	assert.Equal(t, "follower", ok.Value("role"))
	assert.Equal(t, tc.addrs[l], ok.Value("leader"))
	fp.send("submit", "req", "s", "task_type", "t")
	e := fp.expect("error")
	assert.Equal(t, "not_leader", e.Value("code"))
	assert.Equal(t, tc.addrs[l], e.Value("leader"))
	assert.Equal(t, "s", e.Value("req"))
	fp.send("cluster_status", "req", "cs")
	st := fp.expect("cluster_status_ok")
	assert.Equal(t, "follower", st.Value("role"))
	assert.Equal(t, "3", st.Value("count"))
	ex := dialRaw(t, tc.addrs[f])
	ex.send("register", "executor_id", "e1", "task_types", "t", "slots", "1")
	assert.Equal(t, "not_leader", ex.expect("error").Value("code"))
	ex.expectClosed()

	// The leader goes; the one elected next holds every confirmed task.
	require.NoError(t, tc.stops[l]())
	tc.stops[l] = nil
	cl.expectClosed()
	nl := tc.leader()
	require.NotEqual(t, l, nl)
	cl = clientPeer(t, tc.addrs[nl])
	for _, id := range ids {
		cl.send("query", "req", "q", "task_id", id)
		assert.Equal(t, "pending", cl.expect("task_state").Value("state"), "task %s", id)
	}
	cl.send("submit", "req", "again", "task_type", "t", "key", "k3")
	m := cl.expect("submitted")
	assert.Equal(t, ids[3], m.Value("task_id"))
	assert.Equal(t, "true", m.Value("duplicate"))
	cl.send("submit", "req", "new", "task_type", "t")
	cl.expect("submitted")

	// An executor registers with the new leader and gets a task whose
	// version is of the new leader's epoch.
	exec := executorPeer(t, tc.addrs[nl], "e1", "t", 1)
	task := exec.expect("task")
	v, err := task.Uint("version")
	require.NoError(t, err)
	assert.Greater(t, v, uint64(1)<<32, "a leader of term 2 or more dispatches in its epoch")
}

// status asks a member for cluster_status.
func status(t *testing.T, addr string) map[string]string {
	t.Helper()
	p := clientPeer(t, addr)
	defer p.c.Close()
	p.send("cluster_status", "req", "st")
	m := p.expect("cluster_status_ok")
	out := map[string]string{}
	for k, v := range m.WithPrefix("") {
		out[k] = v
	}
	return out
}

func TestCluster_AddRemoveTransfer(t *testing.T) {
	tc := startCluster(t, 3)
	l := tc.leader()
	st := status(t, tc.addrs[l])
	assert.Equal(t, "leader", st["role"])
	assert.Equal(t, "3", st["count"])
	for i := range 3 {
		assert.Equal(t, "true", st[fmt.Sprintf("member.%d.voter", i)])
		assert.NotEmpty(t, st[fmt.Sprintf("member.%d.raft", i)])
	}

	// A fourth member, with no state and no member list, waits to be added.
	extra := cluster.Member{ID: freeAddr(t), Raft: freeAddr(t), Voter: true}
	_, stop, err := maincontroltest.Launch(maincontrol.LoadedRaft(maincontrol.Config{Listen: extra.ID, DataDir: t.TempDir(), RaftListen: extra.Raft, Logger: testLogger()}))
	require.NoError(t, err)
	defer func() { assert.NoError(t, stop()) }()

	f := (l + 1) % 3
	fp := clientPeer(t, tc.addrs[f])
	fp.send("cluster_add", "req", "a", "id", extra.ID, "raft", extra.Raft)
	assert.Equal(t, "not_leader", fp.expect("error").Value("code"), "a follower refuses a change")

	cl := clientPeer(t, tc.addrs[l])
	cl.send("cluster_add", "req", "a", "id", extra.ID, "raft", extra.Raft, "voter", "false")
	assert.Equal(t, "a", cl.expect("cluster_ok").Value("req"))
	assert.Equal(t, "4", status(t, tc.addrs[l])["count"])
	deadline := time.Now().Add(patience.Scale(10 * time.Second))
	for status(t, extra.ID)["leader"] != tc.addrs[l] {
		require.True(t, time.Now().Before(deadline), "the added member never learned the leader")
		time.Sleep(10 * time.Millisecond)
	}
	cl.send("cluster_remove", "req", "r", "id", extra.ID)
	assert.Equal(t, "r", cl.expect("cluster_ok").Value("req"))
	assert.Equal(t, "3", status(t, tc.addrs[l])["count"])
	cl.send("cluster_remove", "req", "r2", "id", "127.0.0.1:1")
	assert.Equal(t, "bad_request", cl.expect("error").Value("code"))

	// The leadership moves where it is told.
	cl.send("cluster_transfer", "req", "t", "id", tc.addrs[f])
	deadline = time.Now().Add(patience.Scale(20 * time.Second))
	for tc.leader() != f {
		require.True(t, time.Now().Before(deadline), "the leadership did not move to %s", tc.addrs[f])
		time.Sleep(10 * time.Millisecond)
	}
}

// The leader removing itself replies, then steps down: its cluster_ok is
// committed, so the stepdown's close comes after it, never in its place.
func TestCluster_LeaderRemovingItselfReplies(t *testing.T) {
	tc := startCluster(t, 3)
	l := tc.leader()
	cl := clientPeer(t, tc.addrs[l])
	cl.send("cluster_remove", "req", "r", "id", tc.addrs[l])
	assert.Equal(t, "r", cl.expect("cluster_ok").Value("req"))
	cl.expectClosed()
	nl := tc.leader()
	require.NotEqual(t, l, nl)
	assert.Equal(t, "2", status(t, tc.addrs[nl])["count"])
}
