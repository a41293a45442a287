package bench

import (
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The stamp is when the bytes reached the socket, not when they were read:
// bytes left unread for 100 ms must carry their arrival time.
func TestRxStamper_StampsArrivalNotRead(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer c.Close()
	sc, err := ln.Accept()
	require.NoError(t, err)
	defer sc.Close()
	rx := newRxStamper(sc)
	require.NotNil(t, rx, "SO_TIMESTAMPNS is on every Linux kernel Go supports")

	buf := make([]byte, 64)
	// The kernel turns stamping on host-wide a moment after the first
	// socket asks (until then read falls back to its own time): wait for
	// a stamped read before timing any.
	warm := time.Now().Add(5 * time.Second)
	for {
		sent := time.Now()
		_, err = c.Write([]byte("w"))
		require.NoError(t, err)
		time.Sleep(20 * time.Millisecond)
		_, arrived, err := rx.read(buf)
		require.NoError(t, err)
		if arrived.Before(sent.Add(10 * time.Millisecond)) {
			break
		}
		require.True(t, time.Now().Before(warm), "no read was stamped by the kernel in 5 s")
	}
	for round := range 3 {
		before := time.Now()
		_, err = c.Write([]byte("frame"))
		require.NoError(t, err)
		after := time.Now()
		time.Sleep(100 * time.Millisecond)
		n, arrived, err := rx.read(buf)
		require.NoError(t, err)
		require.Equal(t, "frame", string(buf[:n]), "round %d", round)
		require.False(t, arrived.Before(before.Add(-time.Millisecond)), "round %d: stamped %v before the write at %v", round, arrived, before)
		require.True(t, arrived.Before(after.Add(50*time.Millisecond)), "round %d: stamped %v, long after the write ended at %v", round, arrived, after)
	}
	require.NoError(t, c.Close())
	_, _, err = rx.read(buf)
	require.Error(t, err, "end of stream")
}
