package maincontrol

import (
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/panjf2000/gnet/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/internal/patience"
	"github.com/apollo11/apollo11/maincontrol/core"
	"github.com/apollo11/apollo11/wire"
)

// A hello sent in time that waits unread while its event loop is busy
// past the handshake timeout is the server's lateness: the peer is
// served once the loop reads it. A silent peer beside it is still closed
// at its deadline, and one that sent half a hello is closed once the
// loop has read that half.
func TestHandshake_BusyLoopIsNotPeerSilence(t *testing.T) {
	// Late's hello must go out before its deadline, after three dials.
	timeout := patience.Scale(500 * time.Millisecond)
	cfg := Config{EventLoops: 1}
	cfg.Core.HandshakeTimeout = timeout
	s, addr := serveOne(t, cfg)

	blocker := dialHS(t, addr)
	blocker.send(t, "hello")
	blocker.expect(t, "hello_ok")
	silent, late, half := dialHS(t, addr), dialHS(t, addr), dialHS(t, addr)

	// Hold the one event loop in a callback, as a long frame would. The
	// ticker's goroutine runs on.
	s.mu.Lock()
	var gc gnet.Conn
	for _, cn := range s.gate.conns {
		if s.core.Greeted(cn.id) {
			gc = cn.gc
		}
	}
	lateConn := s.gate.conns[late.id(t, s)]
	s.mu.Unlock()
	require.NotNil(t, gc)
	held, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	t.Cleanup(free) // before the server stops
	require.NoError(t, gc.Wake(func(gnet.Conn, error) error {
		close(held)
		<-release
		return nil
	}))
	<-held

	late.send(t, "hello")
	frame, err := wire.AppendFrame(nil, wire.NewMessage("hello"))
	require.NoError(t, err)
	_, err = half.c.Write(frame[:len(frame)/2])
	require.NoError(t, err)

	// Wait until late's deadline has been looked at.
	deadline := time.Now().Add(patience.Scale(10 * time.Second))
	for {
		s.mu.Lock()
		done := lateConn.hs.asked || s.core.PeerCount() == 1 // without the grace: all three closed
		s.mu.Unlock()
		if done {
			break
		}
		require.True(t, time.Now().Before(deadline), "late's deadline never came")
		time.Sleep(10 * time.Millisecond)
	}
	free()

	late.expect(t, "hello_ok")
	silent.expectClosed(t)
	half.expectClosed(t)
}

// hsPeer is a raw connection through its welcome.
type hsPeer struct {
	c      net.Conn
	r      *wire.Reader
	w      *wire.Writer
	remote string // the server's view of it
}

func dialHS(t *testing.T, addr string) *hsPeer {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	p := &hsPeer{c: c, r: wire.NewReader(c, 0), w: wire.NewWriter(c, 0), remote: c.LocalAddr().String()}
	p.expect(t, "welcome")
	return p
}

// id finds the server's peer id of p.
func (p *hsPeer) id(t *testing.T, s *Server) core.PeerID {
	for id, cn := range s.gate.conns {
		if remoteString(cn.gc) == p.remote {
			return id
		}
	}
	require.FailNow(t, "no such connection", p.remote)
	return 0
}

func (p *hsPeer) send(t *testing.T, typ wire.Kind) {
	require.NoError(t, p.w.Send(wire.NewMessage(typ)))
}

func (p *hsPeer) expect(t *testing.T, typ string) {
	require.NoError(t, p.c.SetReadDeadline(time.Now().Add(patience.Scale(10*time.Second))))
	m, err := p.r.ReadMessage()
	require.NoError(t, err, "waiting for %s", typ)
	assert.Equal(t, typ, m.Type())
}

// expectClosed waits for the server to close p without an error frame.
func (p *hsPeer) expectClosed(t *testing.T) {
	require.NoError(t, p.c.SetReadDeadline(time.Now().Add(patience.Scale(10*time.Second))))
	m, err := p.r.ReadMessage()
	require.Nil(t, m)
	require.True(t, errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || isReset(err), "not closed: %v", err)
}

func isReset(err error) bool {
	var ne *net.OpError
	return errors.As(err, &ne) && !ne.Timeout()
}

// serveOne runs one server on a free port until the test ends.
func serveOne(t *testing.T, cfg Config) (*Server, string) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	cfg.Listen = ln.Addr().String()
	require.NoError(t, ln.Close())
	return runServer(t, cfg), cfg.Listen
}
