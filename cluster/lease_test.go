package cluster

import (
	"fmt"
	"net"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The lease is half the heartbeat timeout: 200 ms by default, and at
// least two rounds of an idle leader's heartbeats (a fifth of the
// timeout at most) whatever the timeout.
func TestRaftConfig_LeaseIsHalfTheHeartbeatTimeout(t *testing.T) {
	for _, hb := range []time.Duration{DefaultHeartbeatTimeout, 2 * time.Second, 6 * time.Second, time.Minute} {
		rc := raftConfig(Config{ID: "a:1", HeartbeatTimeout: hb, ElectionTimeout: hb, Logger: quiet()})
		assert.Equal(t, hb/2, rc.LeaderLeaseTimeout, "heartbeat timeout %s", hb)
		require.NoError(t, raft.ValidateConfig(rc))
	}
}

// deafLayer is a Raft stream layer whose accepted connections can stop
// reading for a while, as a member starved of CPU would.
type deafLayer struct {
	raft.StreamLayer
	deaf sync.RWMutex // held while deaf
}

func (l *deafLayer) Accept() (net.Conn, error) {
	c, err := l.StreamLayer.Accept()
	if err != nil {
		return nil, err
	}
	return &deafConn{Conn: c, l: l}, nil
}

type deafConn struct {
	net.Conn
	l *deafLayer
}

func (c *deafConn) Read(p []byte) (int, error) {
	c.l.deaf.RLock()
	c.l.deaf.RUnlock() // it only waits out a deaf spell
	return c.Conn.Read(p)
}

// A leader steps down when no quorum answered within its lease. With the
// heartbeat timeout stretched to 6 s, as the tests do on a loaded host, a
// follower deaf for 0.75 s is no reason: the followers would wait 6 s for
// the leader. Raft's default cap of 500 ms on the lease would make it give up.
// Two members, so the one follower's silence is a lost quorum.
func TestNode_LeaseFollowsTheHeartbeatTimeout(t *testing.T) {
	const long = 6 * time.Second
	dir := t.TempDir()
	var members []Member
	for i := range 2 {
		members = append(members, Member{ID: fmt.Sprintf("client-%d:1", i), Raft: freeAddr(t), Voter: true})
	}
	var nodes []*Node
	var layers []*deafLayer
	for i, m := range members {
		tcp, err := newTCPStream(m.Raft, 0, quiet())
		require.NoError(t, err)
		l := &deafLayer{StreamLayer: tcp}
		n, err := Start(Config{ID: m.ID, RaftAddr: m.Raft, Members: members, Dir: filepath.Join(dir, fmt.Sprint(i)),
			Logger: quiet(), HeartbeatTimeout: long, ElectionTimeout: long, Stream: l}, &listApp{})
		require.NoError(t, err)
		t.Cleanup(func() { _ = n.Close() })
		nodes, layers = append(nodes, n), append(layers, l)
	}
	timeouts := func(hb time.Duration) {
		for _, n := range nodes {
			rc := n.Raft().ReloadableConfig()
			rc.HeartbeatTimeout, rc.ElectionTimeout = hb, hb
			require.NoError(t, n.Raft().ReloadConfig(rc))
		}
	}
	// Shorter timeouts elect a leader sooner; Raft takes none shorter than
	// the lease, which stays as started.
	timeouts(long / 2)
	leader := -1
	waitFor(t, "a leader", func() bool {
		for i, n := range nodes {
			if n.IsLeader() {
				leader = i
			}
		}
		return leader >= 0
	})
	timeouts(long)
	term := nodes[leader].Term()

	follower := layers[1-leader]
	follower.deaf.Lock()
	// Deaf for long/8: past Raft's default 500 ms cap on the lease, and with the last
	// heartbeat up to long/5 before it, still well within long/2.
	spell := long / 8
	changes, end := nodes[leader].LeaderCh(), time.After(spell)
deaf:
	for {
		select {
		case gained := <-changes: // a gain may still be buffered from the election
			if !gained {
				break deaf
			}
		case <-end:
			break deaf
		}
	}
	follower.deaf.Unlock()
	assert.True(t, nodes[leader].IsLeader(), "the leader stepped down, its follower deaf for %s", spell)
	assert.Equal(t, term, nodes[leader].Term())
}
