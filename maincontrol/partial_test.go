package maincontrol_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/maincontrol"
)

// A frame left incomplete, with no new byte of it for FrameStallTimeout,
// gets its connection cut off: gnet would hold the partial frame (up to
// the max frame) for as long as the peer likes. A frame that arrives
// slowly but steadily is read to its end.
func TestPartialFrame_Stalled(t *testing.T) {
	t.Parallel()
	const timeout = 300 * time.Millisecond
	addr := startServer(t, maincontrol.Config{FrameStallTimeout: timeout})
	other := clientPeer(t, addr)

	stuck := clientPeer(t, addr)
	frame := mustFrame(t, "stats", "req", "never-finished")
	_, err := stuck.c.Write(frame[:len(frame)-3])
	require.NoError(t, err)
	require.NoError(t, stuck.c.SetReadDeadline(time.Now().Add(10*time.Second)))
	m, err := stuck.r.ReadMessage()
	require.NoError(t, err, "cut off without a word")
	assert.Equal(t, "error", m.Type())
	assert.Equal(t, "bad_request", m.Value("code"))
	assert.Contains(t, m.Value("message"), "frame left incomplete")
	_, err = stuck.r.ReadMessage()
	assert.Error(t, err, "the connection is closed")
	other.alive("meanwhile")
}

func TestPartialFrame_SlowButSteady(t *testing.T) {
	t.Parallel()
	const timeout = time.Second
	addr := startServer(t, maincontrol.Config{FrameStallTimeout: timeout})
	slow := clientPeer(t, addr)
	frame := mustFrame(t, "stats", "req", "slow")
	// In six pieces a third of the timeout apart: twice the timeout in all.
	step := max(1, len(frame)/6)
	for i := 0; i < len(frame); i += step {
		_, err := slow.c.Write(frame[i:min(i+step, len(frame))])
		require.NoError(t, err)
		time.Sleep(timeout / 3)
	}
	require.NoError(t, slow.c.SetReadDeadline(time.Now().Add(10*time.Second)))
	m, err := slow.r.ReadMessage()
	require.NoError(t, err)
	assert.Equal(t, "stats", m.Type())
	assert.Equal(t, "slow", m.Value("req"))
}
