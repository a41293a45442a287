package client_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/client"
)

func TestClusterStatus(t *testing.T) {
	f := mustStartFakeServer(t)
	c, sc := mustDial(t, f, client.Options{})
	go func() {
		m := sc.expect("cluster_status")
		sc.send("cluster_status_ok", "req", m.Value("req"), "id", "a:1", "role", "leader", "leader", "a:1",
			"term", "4", "commit_index", "120", "applied_index", "119", "count", "2",
			"member.0.id", "a:1", "member.0.raft", "a:7001", "member.0.voter", "true",
			"member.0.match_index", "120", "member.0.lag", "0",
			"member.1.id", "b:1", "member.1.raft", "b:7001", "member.1.voter", "false",
			"member.1.match_index", "100", "member.1.lag", "20", "member.1.future", "x")
		m = sc.expect("cluster_status")
		sc.send("cluster_status_ok", "req", m.Value("req"), "id", "b:1", "role", "follower",
			"term", "4", "commit_index", "1", "applied_index", "1", "count", "2", "member.0.id", "a:1")
	}()
	st, err := c.ClusterStatus(context.Background())
	require.NoError(t, err)
	lag, match := uint64(20), uint64(100)
	zero, full := uint64(0), uint64(120)
	assert.Equal(t, client.ClusterStatus{ID: "a:1", Role: "leader", Leader: "a:1", Term: 4, CommitIndex: 120, AppliedIndex: 119,
		Members: []client.ClusterMember{
			{ID: "a:1", Raft: "a:7001", Voter: true, MatchIndex: &full, Lag: &zero},
			{ID: "b:1", Raft: "b:7001", Voter: false, MatchIndex: &match, Lag: &lag},
		}}, st)
	_, err = c.ClusterStatus(context.Background())
	assert.ErrorContains(t, err, "count=2 but no member.1.id")
}

func TestClusterChanges(t *testing.T) {
	f := mustStartFakeServer(t)
	c, sc := mustDial(t, f, client.Options{})
	go func() {
		m := sc.expect("cluster_add")
		assert.Equal(t, []string{"d:1", "d:7001", "false"}, []string{m.Value("id"), m.Value("raft"), m.Value("voter")})
		sc.send("cluster_ok", "req", m.Value("req"))
		m = sc.expect("cluster_remove")
		assert.Equal(t, "d:1", m.Value("id"))
		sc.send("cluster_ok", "req", m.Value("req"))
		m = sc.expect("cluster_transfer")
		_, has := m.Get("id")
		assert.False(t, has, "no id: the most up-to-date voter")
		sc.send("error", "req", m.Value("req"), "code", "unavailable", "message", "no voter")
	}()
	ctx := context.Background()
	require.NoError(t, c.ClusterAdd(ctx, "d:1", "d:7001", false))
	require.NoError(t, c.ClusterRemove(ctx, "d:1"))
	assert.True(t, client.IsCode(c.ClusterTransfer(ctx, ""), "unavailable"))
}

// A lost reply to a cluster change leaves its outcome unknown: a second
// cluster_add could undo another admin's change made in between. pause
// and resume leave the same state when sent twice, so they are sent again.
func TestClusterChanges_NotSentAgain(t *testing.T) {
	f := mustStartFakeServer(t)
	c, sc := mustDial(t, f, client.Options{Reconnect: quick})
	ch := make(chan outcome, 3)
	ctx := context.Background()
	go func() { ch <- outcome{"add", c.ClusterAdd(ctx, "d:1", "d:7001", true)} }()
	go func() { ch <- outcome{"remove", c.ClusterRemove(ctx, "d:1")} }()
	go func() {
		_, err := c.Pause(ctx, "x")
		ch <- outcome{"pause", err}
	}()
	for range 3 {
		sc.expect("")
	}
	sc.Net.Close()

	lost := collect(t, ch, 2)
	require.Equal(t, "add", lost[0].name)
	require.Equal(t, "remove", lost[1].name)
	for _, o := range lost {
		assert.ErrorIs(t, o.err, client.ErrOutcomeUnknown, o.name)
		assert.ErrorContains(t, o.err, "apollo11 cluster status", o.name)
	}

	sc2 := f.accept(t)
	sc2.hello()
	m := sc2.expect("pause")
	sc2.send("paused", "req", m.Value("req"), "changed", "false")
	assert.NoError(t, collect(t, ch, 1)[0].err)
	go func() {
		m := sc2.expect("stats") // the next frame: neither change was sent again
		sc2.send("stats", "req", m.Value("req"), "uptime_ms", "1")
	}()
	_, err := c.Stats(ctx)
	require.NoError(t, err)
}
