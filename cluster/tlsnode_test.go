package cluster

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/internal/tlsfiles"
	"github.com/apollo11/apollo11/internal/tlsfiles/tlsfilestest"
)

// TestNode_ThreeMembersOverMutualTLS: three members with Config.TLS from
// one CA elect a leader and replicate; a fourth voter whose certificate
// another CA signed never receives an entry, and the others carry on.
func TestNode_ThreeMembersOverMutualTLS(t *testing.T) {
	ca, other := tlsfilestest.NewCA(t, "raft CA"), tlsfilestest.NewCA(t, "other CA")
	dir := t.TempDir()
	var members []Member
	for i := range 4 {
		members = append(members, Member{ID: fmt.Sprintf("client-%d:1", i), Raft: freeAddr(t), Voter: true})
	}
	nodes := make([]*Node, 4)
	apps := make([]*listApp, 4)
	defer func() {
		for _, n := range nodes {
			if n != nil {
				_ = n.Close()
			}
		}
	}()
	for i, m := range members {
		signer := ca
		if i == 3 {
			signer = other
		}
		c, k := signer.Issue(tlsfilestest.Leaf{Name: fmt.Sprint("m", i)})
		l, err := tlsfiles.Load(tlsfiles.Files{Cert: c, Key: k, CA: ca.CAFile}, quiet())
		require.NoError(t, err)
		apps[i] = &listApp{}
		nodes[i], err = Start(loaded(Config{ID: m.ID, RaftAddr: m.Raft, Members: members, Dir: filepath.Join(dir, fmt.Sprint(i)),
			Logger: quiet(), TLS: l}), apps[i])
		require.NoError(t, err)
	}
	leader := func() int {
		for i, n := range nodes[:3] {
			if n.IsLeader() {
				return i
			}
		}
		return -1
	}
	waitFor(t, "a leader among the three with good certificates", func() bool { return leader() >= 0 })
	l := leader()
	durable, failed := make(chan uint64, 16), make(chan error, 16)
	p := NewProposer(nodes[l].Raft(), func(lsn uint64) { durable <- lsn }, func(_ uint64, err error) { failed <- err })
	p.Lead(Origin{ID: nodes[l].ID(), Term: nodes[l].Term()})
	var last uint64
	for i := range 5 {
		last = p.Append([]byte(fmt.Sprint("r", i)))
	}
	awaitDurable(t, durable, failed, last)
	p.Close()
	for i := range 3 {
		waitFor(t, "replication over TLS", func() bool { return len(apps[i].list()) == 5 })
	}
	assert.Empty(t, apps[3].list(), "the member with a certificate from another CA got entries")
	assert.False(t, nodes[3].IsLeader())
}
