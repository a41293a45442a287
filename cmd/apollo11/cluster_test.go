package main

import (
	"bytes"
	"net"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/internal/fakemain"
	"github.com/apollo11/apollo11/maincontrol"
	"github.com/apollo11/apollo11/maincontrol/maincontroltest"
)

// clusterStatusOK answers cluster_status with two voters led by leader.
func clusterStatusOK(c *fakemain.Conn, req, id, role, leader, a, b string) {
	c.Send("cluster_status_ok", "req", req, "id", id, "role", role, "leader", leader, "term", "3",
		"commit_index", "10", "applied_index", "10", "count", "2",
		"member.0.id", a, "member.0.raft", "r0:1", "member.0.voter", "true",
		"member.1.id", b, "member.1.raft", "r1:1", "member.1.voter", "true", "member.1.lag", "2")
}

// The old leader closes its connection as it hands over, taking the reply
// with it; the command finds the new leader in --addr and reports it.
func TestCluster_TransferLeadership(t *testing.T) {
	a, b := fakemain.Start(t), fakemain.Start(t)
	served := make(chan struct{})
	go func() {
		defer close(served)
		c := a.Accept(t)
		m := next(t, c, "hello")
		c.Send("hello_ok", "req", m.Value("req"), "role", "leader", "leader", a.Addr())
		m = next(t, c, "cluster_status")
		clusterStatusOK(c, m.Value("req"), a.Addr(), "leader", a.Addr(), a.Addr(), b.Addr())
		m = next(t, c, "cluster_transfer")
		assert.Equal(t, b.Addr(), m.Value("id"))
		c.Net.Close() // stepping down
		c = b.Accept(t)
		m = next(t, c, "hello")
		c.Send("hello_ok", "req", m.Value("req"), "role", "leader", "leader", b.Addr())
		m = next(t, c, "cluster_status")
		clusterStatusOK(c, m.Value("req"), b.Addr(), "leader", b.Addr(), a.Addr(), b.Addr())
	}()
	var out, errOut bytes.Buffer
	rc := run([]string{"cluster", "transfer-leadership", "--addr", a.Addr() + "," + b.Addr(), b.Addr()}, &out, &errOut)
	<-served
	require.Equal(t, 0, rc, errOut.String())
	assert.Equal(t, "leader "+a.Addr()+" -> "+b.Addr()+" (term 3)\n", out.String())
}

// cluster status asks a candidate when no member leads, and still asks
// every other member: one answers, one is down. It says there is no
// leader and exits 1.
func TestCluster_StatusWithoutLeader(t *testing.T) {
	f, g := fakemain.Start(t), fakemain.Start(t)
	down := closedAddr(t)
	members := []string{"count", "3",
		"member.0.id", f.Addr(), "member.0.raft", "r0:1", "member.0.voter", "true",
		"member.1.id", g.Addr(), "member.1.raft", "r1:1", "member.1.voter", "true",
		"member.2.id", down, "member.2.raft", "r2:1", "member.2.voter", "true"}
	serve := func(s *fakemain.Server, applied string) <-chan struct{} {
		served := make(chan struct{})
		go func() {
			defer close(served)
			c := s.Accept(t)
			m := next(t, c, "hello")
			c.Send("hello_ok", "req", m.Value("req"), "role", "candidate")
			m = next(t, c, "cluster_status")
			c.Send("cluster_status_ok", append([]string{"req", m.Value("req"), "id", s.Addr(), "role", "candidate", "term", "7",
				"commit_index", "10", "applied_index", applied}, members...)...)
		}()
		return served
	}
	for _, asJSON := range []bool{false, true} {
		fs, gs := serve(f, "9"), serve(g, "8")
		var out, errOut bytes.Buffer
		args := []string{"cluster", "status", "--addr", f.Addr(), "--request-timeout", "5s"}
		if asJSON {
			args = append(args, "--json")
		}
		rc := run(args, &out, &errOut)
		<-fs
		<-gs
		assert.Equal(t, 1, rc, "no leader: scripts can tell; %s", errOut.String())
		assert.Empty(t, errOut.String())
		if asJSON {
			assert.Contains(t, out.String(), `"no_leader": "no leader: 2 of 3 voters reachable; an election may be under way"`)
			assert.Contains(t, out.String(), `"unreachable": "`)
			assert.Contains(t, out.String(), `"applied_index": 8`)
			continue
		}
		lines := strings.Split(out.String(), "\n")
		require.Len(t, lines, 6, out.String())
		assert.Equal(t, "answered by "+f.Addr()+" (candidate)  leader (none known)  term 7  commit_index 10  applied_index 9", lines[0])
		assert.Equal(t, "member "+f.Addr()+"  raft r0:1  voter", lines[1])
		assert.Equal(t, "member "+g.Addr()+"  raft r1:1  voter  candidate  applied_index 8", lines[2])
		assert.Contains(t, lines[3], "member "+down+"  raft r2:1  voter  unreachable (")
		assert.Equal(t, "no leader: 2 of 3 voters reachable; an election may be under way", lines[4])
	}
}

// The answering member was just restarted and knows no leader yet, but
// another member answers as leader: there is a leader, and the command
// names it and exits 0.
func TestCluster_StatusLeaderFromAnotherMember(t *testing.T) {
	f, g := fakemain.Start(t), fakemain.Start(t)
	serve := func(s *fakemain.Server, role, leader string) <-chan struct{} {
		served := make(chan struct{})
		go func() {
			defer close(served)
			c := s.Accept(t)
			m := next(t, c, "hello")
			c.Send("hello_ok", "req", m.Value("req"), "role", role, "leader", leader)
			m = next(t, c, "cluster_status")
			c.Send("cluster_status_ok", "req", m.Value("req"), "id", s.Addr(), "role", role, "leader", leader,
				"term", "3", "commit_index", "10", "applied_index", "10", "count", "2",
				"member.0.id", f.Addr(), "member.0.raft", "r0:1", "member.0.voter", "true",
				"member.1.id", g.Addr(), "member.1.raft", "r1:1", "member.1.voter", "true")
		}()
		return served
	}
	fs, gs := serve(f, "follower", ""), serve(g, "leader", g.Addr())
	var out, errOut bytes.Buffer
	rc := run([]string{"cluster", "status", "--addr", f.Addr(), "--request-timeout", "5s"}, &out, &errOut)
	<-fs
	<-gs
	assert.Equal(t, 0, rc, "%s%s", out.String(), errOut.String())
	assert.NotContains(t, out.String(), "no leader")
	first, _, _ := strings.Cut(out.String(), "\n")
	assert.Contains(t, first, "answered by "+f.Addr()+" (follower)  leader "+g.Addr()+"  term 3")
}

// closedAddr returns a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// A single main control does not speak the cluster group: the error says
// so, and the command lines are checked before anything is dialled.
func TestCluster_NotAMemberAndBadLines(t *testing.T) {
	addr, _ := maincontroltest.Start(t, maincontrol.Config{})
	var out, errOut bytes.Buffer
	rc := run([]string{"cluster", "status", "--addr", addr}, &out, &errOut)
	assert.Equal(t, 1, rc)
	assert.Equal(t, 1, strings.Count(errOut.String(), "not a cluster member"), errOut.String())
	assert.Contains(t, errOut.String(), "unknown_type", "the spec's code stays")
	assert.Contains(t, errOut.String(), "--raft-listen")
	for _, args := range [][]string{
		{"cluster"}, {"cluster", "nope"}, {"cluster", "add", "a:1"}, {"cluster", "add", "a:1", "nonsense"},
		{"cluster", "remove"}, {"cluster", "transfer-leadership", "a:1", "b:1"},
	} {
		out.Reset()
		errOut.Reset()
		assert.Equal(t, 2, run(args, &out, &errOut), "%v", args)
	}
}

// statusThen serves a leader's hello and cluster_status on a, then gives
// the connection to then.
func statusThen(t *testing.T, a *fakemain.Server, b string, then func(c *fakemain.Conn)) <-chan struct{} {
	served := make(chan struct{})
	go func() {
		defer close(served)
		c := a.Accept(t)
		m := next(t, c, "hello")
		c.Send("hello_ok", "req", m.Value("req"), "role", "leader", "leader", a.Addr())
		m = next(t, c, "cluster_status")
		clusterStatusOK(c, m.Value("req"), a.Addr(), "leader", a.Addr(), a.Addr(), b)
		then(c)
	}()
	return served
}

// The leader's own status names it once, not as "leader  leader".
func TestCluster_StatusFromLeaderNamesItOnce(t *testing.T) {
	a := fakemain.Start(t)
	served := statusThen(t, a, "b:1", func(*fakemain.Conn) {})
	var out, errOut bytes.Buffer
	rc := run([]string{"cluster", "status", "--addr", a.Addr()}, &out, &errOut)
	<-served
	require.Equal(t, 0, rc, errOut.String())
	first, _, _ := strings.Cut(out.String(), "\n")
	assert.Equal(t, "answered by the leader "+a.Addr()+"  term 3  commit_index 10  applied_index 10", first)
}

// Handing the leadership to the leader itself asks for what holds: the
// command says so and exits 0, sending no cluster_transfer.
func TestCluster_TransferToLeaderAlreadyLeads(t *testing.T) {
	a := fakemain.Start(t)
	served := statusThen(t, a, "b:1", func(c *fakemain.Conn) {
		_, err := c.R.ReadMessage()
		assert.Error(t, err, "nothing more was sent")
	})
	var out, errOut bytes.Buffer
	rc := run([]string{"cluster", "transfer-leadership", "--addr", a.Addr(), a.Addr()}, &out, &errOut)
	<-served
	require.Equal(t, 0, rc, errOut.String())
	assert.Equal(t, a.Addr()+" is already the leader (term 3)\n", out.String())
}

// A member's raft address given as its ID is refused with the ID to use.
func TestCluster_TransferToRaftAddressNamesTheID(t *testing.T) {
	a := fakemain.Start(t)
	served := statusThen(t, a, "b:1", func(c *fakemain.Conn) {
		_, err := c.R.ReadMessage()
		assert.Error(t, err, "nothing more was sent")
	})
	var out, errOut bytes.Buffer
	rc := run([]string{"cluster", "transfer-leadership", "--addr", a.Addr(), "r1:1"}, &out, &errOut)
	<-served
	assert.Equal(t, 1, rc)
	assert.Contains(t, errOut.String(), "r1:1 is the raft address of member b:1: give its ID, the client address b:1")
}

// With no member leading, a client command says so, names each member's
// role and the flag that bounds the wait, and shows no empty leader.
func TestCluster_NoLeaderErrorNamesTheFlag(t *testing.T) {
	f := fakemain.Start(t, fakemain.WithFollower(fakemain.Follower{Role: "candidate"}))
	down := closedAddr(t)
	var out, errOut bytes.Buffer
	rc := run([]string{"stats", "--addr", f.Addr() + "," + down, "--request-timeout", "300ms"}, &out, &errOut)
	assert.Equal(t, 1, rc)
	msg := errOut.String()
	assert.Contains(t, msg, "no member leads (a majority of the voters must be up to elect a leader; none was elected in 300ms)")
	assert.Contains(t, msg, f.Addr()+" is a candidate")
	assert.Contains(t, msg, "cannot connect to "+down)
	assert.Contains(t, msg, "(--request-timeout 300ms bounds the wait for an election)")
	assert.NotContains(t, msg, "dial timeout")
	assert.NotContains(t, msg, `leader ""`)
	assert.NotContains(t, msg, "cannot reach", "members were reached")
}
