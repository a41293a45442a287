package maincontrol_test

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/cluster"
	"github.com/apollo11/apollo11/internal/patience"
	"github.com/apollo11/apollo11/maincontrol"
	"github.com/apollo11/apollo11/maincontrol/maincontroltest"
)

// testCluster is n members in this process, on loopback.
type testCluster struct {
	t     *testing.T
	addrs []string
	stops []func() error
}

func startCluster(t *testing.T, n int) *testCluster {
	t.Helper()
	dir := t.TempDir()
	tc := &testCluster{t: t}
	var members []cluster.Member
	for range n {
		members = append(members, cluster.Member{ID: freeAddr(t), Raft: freeAddr(t), Voter: true})
		tc.addrs = append(tc.addrs, members[len(members)-1].ID)
	}
	for i, m := range members {
		_, stop, err := maincontroltest.Launch(maincontrol.Config{Listen: m.ID, DataDir: filepath.Join(dir, fmt.Sprint(i)),
			RaftListen: m.Raft, ClusterMembers: members, Logger: testLogger()})
		require.NoError(t, err)
		tc.stops = append(tc.stops, stop)
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
			p := dialRaw(tc.t, a)
			p.send("hello", "req", "h")
			ok := p.expect("hello_ok")
			_ = p.c.Close()
			if ok.Value("role") == "leader" {
				require.Equal(tc.t, a, ok.Value("leader"))
				return i
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	tc.t.Fatal("no leader elected")
	return -1
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
