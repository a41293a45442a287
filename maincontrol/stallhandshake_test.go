package maincontrol_test

import (
	"errors"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/maincontrol"
	"github.com/apollo11/apollo11/snapshot/snapshottest"
	"github.com/apollo11/apollo11/wire"
)

// A disk that hangs, not yet declared stalled, must not hold a new
// connection's handshake: welcome and hello_ok confirm nothing. Held, the
// welcome came out only when the stall was declared, and the handshake
// timeout, counted from the accept, then closed the peer at once.
func TestServer_HandshakeDuringDiskStall(t *testing.T) {
	ffs := snapshottest.NewFaultFS(nil)
	cfg := maincontrol.Config{DataDir: t.TempDir(), FS: ffs, LogStallTimeout: time.Minute}
	cfg.Core.HandshakeTimeout = time.Second
	addr, _ := runUntil(t, cfg)
	t.Cleanup(ffs.ReleaseSyncs) // before the server stops: it waits for the disk
	a := clientPeer(t, addr)
	ffs.HoldSyncs()
	a.send("submit", "req", "held", "task_type", "t")
	time.Sleep(50 * time.Millisecond) // the submit's record is appended, its fsync hangs

	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	r, w := wire.NewReader(c, 0), wire.NewWriter(c, 0)
	recv := func() (*wire.Message, error) {
		require.NoError(t, c.SetReadDeadline(time.Now().Add(time.Second)))
		return r.ReadMessage()
	}
	m, err := recv()
	require.NoError(t, err, "no welcome while the disk hangs")
	assert.Equal(t, "welcome", m.Type())
	time.Sleep(cfg.Core.HandshakeTimeout / 2) // a peer that takes its time
	require.NoError(t, w.Send(wire.NewMessage("hello")))
	m, err = recv()
	require.NoError(t, err, "no hello_ok while the disk hangs")
	assert.Equal(t, "hello_ok", m.Type())

	time.Sleep(cfg.Core.HandshakeTimeout)
	_, err = recv()
	var ne net.Error
	require.True(t, errors.As(err, &ne) && ne.Timeout(), "the handshake was done in time, the peer stays: %v", err)

	ffs.ReleaseSyncs()
	assert.Equal(t, "held", a.expect("submitted").Value("req"))
}
