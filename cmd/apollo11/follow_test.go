package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/apollo11/apollo11/internal/fakemain"
	"github.com/apollo11/apollo11/maincontrol"
	"github.com/apollo11/apollo11/maincontrol/maincontroltest"
)

// --addr takes a cluster's members. A follower first in the list names
// the leader, which is in the list: the command is served there. One that
// names a server outside the list is passed over for the next address.
func TestCLI_AddrListFollowsLeader(t *testing.T) {
	leader, _ := maincontroltest.Start(t, maincontrol.Config{})
	rogue := fakemain.Start(t)
	for _, hint := range []string{leader, rogue.Addr()} {
		f := fakemain.Start(t, fakemain.WithFollower(fakemain.Follower{HelloLeader: hint, Leader: hint}))
		var out, errOut bytes.Buffer
		rc := run([]string{"stats", "--addr", f.Addr() + "," + leader}, &out, &errOut)
		assert.Equal(t, 0, rc, "hint %s: %s", hint, errOut.String())
		assert.Contains(t, out.String(), "pending", "hint %s", hint)
	}
	rogue.NoConn(t, 0)
}

// Only a follower is given, and it names a leader outside --addr: the
// command fails at once, saying which address to add.
func TestCLI_LeaderOutsideAddrFailsFast(t *testing.T) {
	rogue := fakemain.Start(t)
	f := fakemain.Start(t, fakemain.WithFollower(fakemain.Follower{HelloLeader: rogue.Addr(), Leader: rogue.Addr()}))
	var out, errOut bytes.Buffer
	rc := run([]string{"stats", "--addr", f.Addr(), "--request-timeout", "1m"}, &out, &errOut)
	assert.Equal(t, 1, rc)
	assert.Contains(t, errOut.String(), "the leader "+rogue.Addr()+" is not in --addr "+f.Addr()+": add it")
	assert.Equal(t, int64(1), f.Accepted(), "it did not wait for an election")
	rogue.NoConn(t, 0)
}

// A list with a hole, a repeat or an address no peer can dial is a bad
// command line (exit 2).
func TestAddressFlags_ListsRefused(t *testing.T) {
	for _, tc := range []struct {
		args []string
		err  string
	}{
		{[]string{"stats", "--addr", "127.0.0.1:1,,127.0.0.1:2"}, "has an empty address"},
		{[]string{"stats", "--addr", "127.0.0.1:1,127.0.0.1:1"}, "names 127.0.0.1:1 twice"},
		{[]string{"stats", "--addr", "127.0.0.1:1,unix:///tmp/a11.sock"}, "wire v1 runs on TCP only"},
		{[]string{"executor", "--connect", "127.0.0.1:1,127.0.0.1:70000"}, `port "70000" is not`},
		{[]string{"executor", "--connect", "127.0.0.1:1,"}, "has an empty address"},
	} {
		var out, errOut bytes.Buffer
		rc := run(tc.args, &out, &errOut)
		assert.Equal(t, 2, rc, "%v: %s", tc.args, errOut.String())
		assert.Contains(t, errOut.String(), tc.err, "%v", tc.args)
	}
}
