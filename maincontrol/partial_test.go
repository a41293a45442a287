package maincontrol_test

import (
	"strings"
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

// Past MaxPartialTotal over all connections, those whose incomplete frame
// grew least recently are cut off, before any timeout: a peer adding a
// byte now and then dodges the timeout, not this. The newest go on and
// are answered once their frame is whole.
func TestPartialFrame_TotalCap(t *testing.T) {
	t.Parallel()
	const pad = 16 << 10
	addr := startServer(t, maincontrol.Config{FrameStallTimeout: time.Minute, MaxPartialTotal: 2*pad + pad/2})
	frame := mustFrame(t, "stats", "req", "r", "pad", strings.Repeat("p", pad))
	var peers []*rawPeer
	for range 4 {
		p := clientPeer(t, addr)
		_, err := p.c.Write(frame[:pad])
		require.NoError(t, err)
		peers = append(peers, p)
		time.Sleep(50 * time.Millisecond) // least recent first
	}
	// 64 KiB held against a cap of 40 KiB: the two oldest go.
	for i, p := range peers[:2] {
		require.NoError(t, p.c.SetReadDeadline(time.Now().Add(10*time.Second)))
		m, err := p.r.ReadMessage()
		require.NoError(t, err, "peer %d was not cut off", i)
		assert.Equal(t, "error", m.Type())
		assert.Contains(t, m.Value("message"), "too much held in incomplete frames")
	}
	for i, p := range peers[2:] {
		_, err := p.c.Write(frame[pad:])
		require.NoError(t, err)
		require.NoError(t, p.c.SetReadDeadline(time.Now().Add(10*time.Second)))
		m, err := p.r.ReadMessage()
		require.NoError(t, err, "newer peer %d", i)
		assert.Equal(t, "stats", m.Type(), "newer peer %d", i)
	}
}
