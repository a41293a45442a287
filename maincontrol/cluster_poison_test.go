package maincontrol

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/internal/patience"
)

// A leader's entry fails; a later one of the same leadership commits.
// That commit must not release the failed record's confirmation: the
// member steps down instead, and the client sees its connection close.
func TestCluster_AFailedProposalReleasesNothingAfterIt(t *testing.T) {
	servers := startMembers(t, 3)
	l := leaderOf(t, servers)
	deadline := time.Now().Add(patience.Scale(20 * time.Second))
	cl := dialLeadSnap(t, l.cl.id)
	cl.send("submit", "req", "ok", "task_type", "t")
	cl.expect("submitted")

	// R1's record stays out of Raft, as if its entry failed.
	hold := &heldLog{p: l.cl.prop}
	l.mu.Lock()
	next := l.core.NextTaskID()
	l.gate.store = hold
	l.mu.Unlock()
	cl.send("submit", "req", "r1", "task_type", "t")
	var r1LSN uint64
	for r1LSN == 0 {
		require.True(t, time.Now().Before(deadline), "the submit never reached the core")
		l.mu.Lock()
		if l.core.NextTaskID() > next {
			r1LSN = l.gate.lastLSN
			l.gate.store = l.cl.prop
		}
		l.mu.Unlock()
		time.Sleep(time.Millisecond)
	}
	l.mu.Lock()
	gen := l.cl.leadGen
	l.mu.Unlock()
	l.cl.proposalFailed(gen, errors.New("leadership lost"))
	// A later entry of the same leadership commits (Raft elected this
	// member again before it stepped down).
	l.cl.onDurable(r1LSN)

	require.NoError(t, cl.c.SetReadDeadline(time.Now().Add(patience.Scale(10*time.Second))))
	m, err := cl.r.ReadMessage()
	require.Error(t, err, "no frame after the failure; got %v", m)
	var ne interface{ Timeout() bool }
	if errors.As(err, &ne) {
		require.False(t, ne.Timeout(), "the stepdown closes the connection")
	}
}
