package core

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/apollo11/apollo11/wire"
)

// TestCluster_SingleNodeDoesNotSpeakTheGroup pins section 8: a server
// that does not list a group answers its messages with unknown_type, and
// a single main control lists no cluster.
func TestCluster_SingleNodeDoesNotSpeakTheGroup(t *testing.T) {
	h := newHarness(t)
	p := h.open()
	h.send(p, "hello", "req", "h")
	ok := h.expect(p, "hello_ok")
	assert.False(t, ok.Has("role"))
	assert.False(t, ok.Has("leader"))
	for _, k := range []wire.Kind{wire.KindClusterStatus, wire.KindClusterAdd, wire.KindClusterRemove, wire.KindClusterTransfer} {
		h.send(p, string(k), "req", "r1", "id", "127.0.0.1:1", "raft", "127.0.0.1:2")
		m := h.expect(p, "error")
		assert.Equal(t, string(wire.CodeUnknownType), m.Value("code"), "%s", k)
		assert.Equal(t, "r1", m.Value("req"))
	}
	h.send(p, "stats", "req", "r2")
	h.expect(p, "stats") // the connection stays open
}

// TestCluster_WelcomeOfSingleNodeListsNoCluster: only a member lists it.
func TestCluster_WelcomeOfSingleNodeListsNoCluster(t *testing.T) {
	h := newHarness(t)
	h.next++
	h.c.Open(h.next)
	w, err := wire.ParseWelcome(h.expect(h.next, "welcome"))
	assert.NoError(t, err)
	assert.False(t, w.HasFeature(wire.FeatureCluster))
	assert.True(t, w.HasFeature(wire.FeatureRuns))
}
