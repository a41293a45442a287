package cluster

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/internal/tlsfiles"
	"github.com/apollo11/apollo11/internal/tlsfiles/tlsfilestest"
)

// TestNode_RaftConnectionsCapped: a flood of connections to a follower's
// raft port, plain or TLS, past its cap is closed as soon as accepted,
// while the leader, connected before, still replicates to it. Closed
// connections give their slots back.
func TestNode_RaftConnectionsCapped(t *testing.T) {
	for _, withTLS := range []bool{false, true} {
		t.Run(fmt.Sprint("tls=", withTLS), func(t *testing.T) { testConnCap(t, withTLS) })
	}
}

func testConnCap(t *testing.T, withTLS bool) {
	const maxConns, extra = 16, 8
	dir := t.TempDir()
	var ca *tlsfilestest.CA
	if withTLS {
		ca = tlsfilestest.NewCA(t, "raft CA")
	}
	var members []Member
	for i := range 3 {
		members = append(members, Member{ID: fmt.Sprintf("client-%d:1", i), Raft: freeAddr(t), Voter: true})
	}
	nodes := make([]*Node, 3)
	apps := make([]*listApp, 3)
	defer func() {
		for _, n := range nodes {
			if n != nil {
				_ = n.Close()
			}
		}
	}()
	for i, m := range members {
		cfg := Config{ID: m.ID, RaftAddr: m.Raft, Members: members, Dir: filepath.Join(dir, fmt.Sprint(i)),
			Logger: quiet(), MaxConns: maxConns}
		if withTLS {
			c, k := ca.Issue(tlsfilestest.Leaf{Name: fmt.Sprint("m", i)})
			l, err := tlsfiles.Load(tlsfiles.Files{Cert: c, Key: k, CA: ca.CAFile}, quiet())
			require.NoError(t, err)
			cfg.TLS = l
		}
		apps[i] = &listApp{}
		var err error
		nodes[i], err = Start(loaded(cfg), apps[i])
		require.NoError(t, err)
	}
	leader := func() int {
		for i, n := range nodes {
			if n.IsLeader() {
				return i
			}
		}
		return -1
	}
	waitFor(t, "a leader", func() bool { return leader() >= 0 })
	l := leader()
	durable, failed := make(chan uint64, 32), make(chan error, 32)
	p := NewProposer(nodes[l].Raft(), func(lsn uint64) { durable <- lsn }, func(_ uint64, err error) { failed <- err })
	defer p.Close()
	p.Lead(Origin{ID: nodes[l].ID(), Term: nodes[l].Term()})
	propose := func(from, n int) {
		var last uint64
		for i := range n {
			last = p.Append(fmt.Appendf(nil, "r%d", from+i))
		}
		awaitDurable(t, durable, failed, last)
		for i := range apps {
			waitFor(t, "replication", func() bool { return len(apps[i].list()) == from+n })
		}
	}
	propose(0, 5)

	follower := (l + 1) % 3
	var flood []net.Conn
	defer func() {
		for _, c := range flood {
			_ = c.Close()
		}
	}()
	for range maxConns + extra {
		c, err := net.DialTimeout("tcp", members[follower].Raft, 5*time.Second)
		require.NoError(t, err)
		flood = append(flood, c)
	}
	// A connection the follower holds says nothing (raft waits for a
	// request, TLS for a hello) until the deadline; one refused reads EOF.
	var mu sync.Mutex
	held, closed := 0, 0
	var wg sync.WaitGroup
	for _, c := range flood {
		wg.Go(func() {
			_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
			_, err := c.Read(make([]byte, 1))
			mu.Lock()
			defer mu.Unlock()
			if ne := net.Error(nil); errors.As(err, &ne) && ne.Timeout() || errors.Is(err, os.ErrDeadlineExceeded) {
				held++
			} else {
				closed++
			}
		})
	}
	wg.Wait()
	assert.GreaterOrEqual(t, closed, extra, "connections past the cap were kept open")
	assert.LessOrEqual(t, held, maxConns)

	// The leader's connections, made before the flood, still carry entries.
	propose(5, 5)

	// Closed connections give their slots back: a new one is held again.
	for _, c := range flood {
		_ = c.Close()
	}
	flood = nil
	waitFor(t, "a slot given back", func() bool {
		c, err := net.DialTimeout("tcp", members[follower].Raft, 5*time.Second)
		if err != nil {
			return false
		}
		defer c.Close()
		_ = c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		_, err = c.Read(make([]byte, 1))
		return errors.Is(err, os.ErrDeadlineExceeded)
	})
}
