package main

import (
	"bytes"
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

// cluster status asks a follower when no member leads.
func TestCluster_StatusWithoutLeader(t *testing.T) {
	f := fakemain.Start(t)
	served := make(chan struct{})
	go func() {
		defer close(served)
		c := f.Accept(t)
		m := next(t, c, "hello")
		c.Send("hello_ok", "req", m.Value("req"), "role", "candidate")
		m = next(t, c, "cluster_status")
		c.Send("cluster_status_ok", "req", m.Value("req"), "id", f.Addr(), "role", "candidate", "term", "7",
			"commit_index", "10", "applied_index", "9", "count", "1",
			"member.0.id", f.Addr(), "member.0.raft", "r0:1", "member.0.voter", "true")
	}()
	var out, errOut bytes.Buffer
	rc := run([]string{"cluster", "status", "--addr", f.Addr()}, &out, &errOut)
	<-served
	require.Equal(t, 0, rc, errOut.String())
	assert.Equal(t, "answered by "+f.Addr()+", candidate  leader (none known)  term 7  commit_index 10  applied_index 9\n"+
		"member "+f.Addr()+"  raft r0:1  voter\n", out.String())
}

// A single main control does not speak the cluster group: the error says
// so, and the command lines are checked before anything is dialled.
func TestCluster_NotAMemberAndBadLines(t *testing.T) {
	addr, _ := maincontroltest.Start(t, maincontrol.Config{})
	var out, errOut bytes.Buffer
	rc := run([]string{"cluster", "status", "--addr", addr}, &out, &errOut)
	assert.Equal(t, 1, rc)
	assert.Contains(t, errOut.String(), "not a cluster member")
	for _, args := range [][]string{
		{"cluster"}, {"cluster", "nope"}, {"cluster", "add", "a:1"}, {"cluster", "add", "a:1", "nonsense"},
		{"cluster", "remove"}, {"cluster", "transfer-leadership", "a:1", "b:1"},
	} {
		out.Reset()
		errOut.Reset()
		assert.Equal(t, 2, run(args, &out, &errOut), "%v", args)
	}
}
