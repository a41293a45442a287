package cluster_test

import (
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/cluster"
	"github.com/apollo11/apollo11/internal/patience"
	"github.com/apollo11/apollo11/internal/tlsfiles"
	"github.com/apollo11/apollo11/internal/tlsfiles/tlsfilestest"
)

func streamLayer(t *testing.T, f tlsfiles.Files) *cluster.TLSStreamLayer {
	t.Helper()
	l, err := tlsfiles.Load(f, nil)
	require.NoError(t, err)
	s, err := cluster.NewTLSStreamLayer("127.0.0.1:0", nil, l)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func memberFiles(ca *tlsfilestest.CA, name string) tlsfiles.Files {
	c, k := ca.Issue(tlsfilestest.Leaf{Name: name})
	return tlsfiles.Files{Cert: c, Key: k, CA: ca.CAFile}
}

// countFSM counts the entries applied.
type countFSM struct {
	mu sync.Mutex
	n  int
}

func (f *countFSM) Apply(*raft.Log) any {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	return nil
}
func (f *countFSM) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n
}
func (f *countFSM) Snapshot() (raft.FSMSnapshot, error) { return nil, fmt.Errorf("no snapshots here") }
func (f *countFSM) Restore(io.ReadCloser) error         { return fmt.Errorf("no snapshots here") }

// TestTLSStreamLayer_RaftClusterOverMutualTLS: three raft members whose
// transport is the TLS stream layer elect a leader and replicate an entry
// to every member.
func TestTLSStreamLayer_RaftClusterOverMutualTLS(t *testing.T) {
	ca := tlsfilestest.NewCA(t, "raft CA")
	var (
		layers  []*cluster.TLSStreamLayer
		servers []raft.Server
	)
	for i := range 3 {
		s := streamLayer(t, memberFiles(ca, fmt.Sprintf("m%d", i)))
		layers = append(layers, s)
		servers = append(servers, raft.Server{ID: raft.ServerID(fmt.Sprint("m", i)), Address: raft.ServerAddress(s.Addr().String())})
	}
	var (
		rafts []*raft.Raft
		fsms  []*countFSM
	)
	for i, s := range layers {
		conf := raft.DefaultConfig()
		conf.LocalID = servers[i].ID
		// Stretched with the load: a leader whose quorum did not answer
		// within the lease steps down, and a busy host delays heartbeats.
		conf.HeartbeatTimeout, conf.ElectionTimeout = patience.Scale(200*time.Millisecond), patience.Scale(200*time.Millisecond)
		conf.LeaderLeaseTimeout, conf.CommitTimeout = patience.Scale(100*time.Millisecond), 10*time.Millisecond
		conf.LogOutput = io.Discard
		trans := raft.NewNetworkTransport(s, 3, 5*time.Second, io.Discard)
		store := raft.NewInmemStore()
		fsm := &countFSM{}
		r, err := raft.NewRaft(conf, fsm, store, store, raft.NewInmemSnapshotStore(), trans)
		require.NoError(t, err)
		require.NoError(t, r.BootstrapCluster(raft.Configuration{Servers: servers}).Error())
		rafts, fsms = append(rafts, r), append(fsms, fsm)
	}
	t.Cleanup(func() {
		for _, r := range rafts {
			_ = r.Shutdown().Error()
		}
	})
	var leader *raft.Raft
	require.Eventually(t, func() bool {
		for _, r := range rafts {
			if r.State() == raft.Leader {
				leader = r
				return true
			}
		}
		return false
	}, patience.Scale(20*time.Second), 10*time.Millisecond, "no leader over TLS")
	require.NoError(t, leader.Apply([]byte("x"), patience.Scale(10*time.Second)).Error())
	require.Eventually(t, func() bool {
		for _, f := range fsms {
			if f.count() < 1 {
				return false
			}
		}
		return true
	}, patience.Scale(20*time.Second), 10*time.Millisecond, "the entry reached every member")
}

// TestTLSStreamLayer_WrongCertificatesRefused: a member from another CA,
// with an expired certificate, or without TLS cannot talk to a member;
// one with a good certificate can.
func TestTLSStreamLayer_WrongCertificatesRefused(t *testing.T) {
	ca, other := tlsfilestest.NewCA(t, "raft CA"), tlsfilestest.NewCA(t, "other CA")
	b := streamLayer(t, memberFiles(ca, "b"))
	served := make(chan error, 8)
	go func() {
		for {
			c, err := b.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				buf := make([]byte, 4)
				if _, err := io.ReadFull(c, buf); err != nil {
					served <- err
					return
				}
				_, err := c.Write(buf)
				served <- err
			}()
		}
	}()
	talk := func(from *cluster.TLSStreamLayer) error {
		c, err := from.Dial(raft.ServerAddress(b.Addr().String()), patience.Scale(5*time.Second))
		if err != nil {
			return err
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(patience.Scale(5 * time.Second)))
		if _, err := c.Write([]byte("ping")); err != nil {
			return err
		}
		_, err = io.ReadFull(c, make([]byte, 4))
		return err
	}

	require.NoError(t, talk(streamLayer(t, memberFiles(ca, "a"))))
	require.NoError(t, <-served)

	// Its certificate from another CA, and trusting only that CA: the
	// dialler refuses b's certificate.
	err := talk(streamLayer(t, memberFiles(other, "stranger")))
	require.ErrorContains(t, err, "unknown authority")

	// Trusting b's CA, but its own certificate from another: b refuses it.
	sc, sk := other.Issue(tlsfilestest.Leaf{Name: "stranger2"})
	err = talk(streamLayer(t, tlsfiles.Files{Cert: sc, Key: sk, CA: ca.CAFile}))
	require.ErrorContains(t, err, "unknown certificate authority")
	assert.ErrorContains(t, <-served, "raft TLS handshake")

	ec, ek := ca.Issue(tlsfilestest.Leaf{Name: "expired", Expired: true})
	err = talk(streamLayer(t, tlsfiles.Files{Cert: ec, Key: ek, CA: ca.CAFile}))
	require.ErrorContains(t, err, "expired certificate")
	assert.ErrorContains(t, <-served, "raft TLS handshake")

	// Plaintext: b answers nothing in the clear and closes.
	c, err := net.DialTimeout("tcp", b.Addr().String(), patience.Scale(5*time.Second))
	require.NoError(t, err)
	defer c.Close()
	_, _ = c.Write([]byte("ping"))
	_ = c.SetReadDeadline(time.Now().Add(patience.Scale(10 * time.Second)))
	got, _ := io.ReadAll(c)
	assert.False(t, strings.Contains(string(got), "ping"))
	assert.ErrorContains(t, <-served, "raft TLS handshake")
}

// TestNewTLSStreamLayer_NeedsMutualFiles: no CA bundle, no raft over TLS.
func TestNewTLSStreamLayer_NeedsMutualFiles(t *testing.T) {
	ca := tlsfilestest.NewCA(t, "raft CA")
	c, k := ca.Issue(tlsfilestest.Leaf{Name: "m"})
	l, err := tlsfiles.Load(tlsfiles.Files{Cert: c, Key: k}, nil)
	require.NoError(t, err)
	_, err = cluster.NewTLSStreamLayer("127.0.0.1:0", nil, l)
	require.ErrorIs(t, err, tlsfiles.ErrFiles)
	l, err = tlsfiles.Load(memberFiles(ca, "m2"), nil)
	require.NoError(t, err)
	_, err = cluster.NewTLSStreamLayer("0.0.0.0:0", nil, l)
	require.ErrorContains(t, err, "specific IP")
}
