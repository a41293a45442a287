package maincontrol_test

import (
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/internal/patience"
	"github.com/apollo11/apollo11/internal/syncbuf"
	"github.com/apollo11/apollo11/maincontrol"
)

// A leader that stops gracefully hands its leadership on. Raft's timeouts
// are long here: without the handoff, no follower would even stand for
// election until one of them had passed since the leader's last heartbeat.
func TestCluster_GracefulStopHandsLeadershipOn(t *testing.T) {
	// Stretched with the load, as a handoff's round trips are: the
	// election without it still takes longer than this.
	timeout := patience.Scale(5 * time.Second)
	var logs syncbuf.Buffer
	tc := startClusterWith(t, 3, func(c *maincontrol.Config) {
		c.RaftHeartbeatTimeout, c.RaftElectionTimeout = timeout, timeout
		c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	l := tc.leader()
	require.NoError(t, tc.stops[l]())
	assert.Contains(t, logs.String(), "stopping: leadership handed on")
	tc.stops[l] = nil
	stopped := time.Now()
	nl := tc.leader()
	assert.NotEqual(t, l, nl)
	assert.Less(t, time.Since(stopped), timeout, "the new leader came from an election timeout, not a handoff")
}
