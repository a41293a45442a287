package maincontrol

import (
	"log/slog"
	"net"
	"testing"

	"github.com/panjf2000/gnet/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/maincontrol/core"
	"github.com/apollo11/apollo11/wire"
)

// stubConn is the part of a gnet connection OnOpen and OnTraffic use, with
// input and gnet's unsent count set by the test.
type stubConn struct {
	gnet.Conn
	ctx     any
	in      []byte
	unsent  int
	wakes   int
	written int
}

func (c *stubConn) Context() any          { return c.ctx }
func (c *stubConn) SetContext(v any)      { c.ctx = v }
func (c *stubConn) InboundBuffered() int  { return len(c.in) }
func (c *stubConn) OutboundBuffered() int { return c.unsent }
func (c *stubConn) RemoteAddr() net.Addr  { return &net.TCPAddr{} }
func (c *stubConn) Peek(n int) ([]byte, error) {
	if n > len(c.in) {
		return nil, net.ErrClosed
	}
	return c.in[:n], nil
}
func (c *stubConn) Discard(n int) (int, error) { c.in = c.in[n:]; return n, nil }
func (c *stubConn) Write(p []byte) (int, error) {
	c.written += len(p)
	return len(p), nil
}
func (c *stubConn) Wake(gnet.AsyncCallback) error { c.wakes++; return nil }

// A connection left unread because all peers hold too much unsent output,
// and it its share, waits for the next tick to look again: waking itself
// at once would spin its event loop until the peer reads (gnet says
// nothing when it does).
func TestOutbound_BlockedWaitsForTheTick(t *testing.T) {
	s, err := newServer(Config{Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	c := &stubConn{}
	_, action := s.OnOpen(c)
	require.Equal(t, gnet.None, action)
	cn := c.ctx.(*conn)
	hello, err := wire.AppendFrame(nil, wire.NewMessage("hello"))
	require.NoError(t, err)
	stats, err := wire.AppendFrame(nil, wire.NewMessage("stats"))
	require.NoError(t, err)
	c.in = append(hello, stats...)

	c.unsent = s.cfg.MaxOutbound / 4 // its share, under its own cap
	s.mu.Lock()
	s.noteUnsent(cn, c.unsent)
	s.unsentTotal += s.cfg.MaxOutboundTotal // the other peers' share
	s.mu.Unlock()
	for range 1000 {
		require.Equal(t, gnet.None, s.OnTraffic(c))
	}
	assert.Zero(t, c.wakes, "woke itself")
	assert.Len(t, c.in, len(hello)+len(stats), "read while all peers hold too much")

	// The others catch up; at the tick it is woken and reads again.
	s.mu.Lock()
	s.unsentTotal -= s.cfg.MaxOutboundTotal
	s.wakeBlocked()
	assert.True(t, cn.queued, "not woken at the tick")
	s.mu.Unlock()
	require.Equal(t, gnet.None, s.OnTraffic(c))
	assert.Empty(t, c.in)
	assert.Positive(t, c.written, "hello_ok and stats answered")
}

// Past the total, a peer is cut as it asks for more while holding its
// share; one that only receives (an executor sent tasks) is left for the
// tick to pick among those holding the most.
func TestOutbound_NoteUnsent(t *testing.T) {
	cfg, err := Config{}.withDefaults()
	require.NoError(t, err)
	share := cfg.MaxOutbound / 4
	cases := []struct {
		name          string
		over, asked   bool
		before, after int
		picked        int
		cut           bool
	}{
		{"under the total", false, true, 0, share, 0, false},
		{"asks while holding its share", true, true, 0, share, 0, true},
		{"only receives", true, false, 0, share, 0, false},
		{"asks, holding little", true, true, 0, cfg.MaxOutbound / 16, 0, false},
		{"asks, but sent some", true, true, share, share / 2, 0, false},
		{"picked and still holding", true, false, share, share, share, true},
		{"picked and caught up", true, false, share, share / 4, share, false},
		{"past its own cap", false, false, 0, cfg.MaxOutbound + 1, 0, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := &Server{cfg: cfg}
			cn := &conn{unsent: tc.before, evictAt: tc.picked, asked: tc.asked}
			s.unsentTotal = tc.before
			if tc.over {
				s.unsentTotal += cfg.MaxOutboundTotal
			}
			assert.Equal(t, tc.cut, s.noteUnsent(cn, tc.after) != "")
			assert.Zero(t, cn.evictAt, "a pick is used once")
		})
	}
}

// Once the log is closed (a stop under way, or an event loop gone), a
// change the core still makes is in no record: no confirmation after it
// may go out.
func TestRecord_ClosedLogHoldsConfirmations(t *testing.T) {
	s, err := newServer(Config{DataDir: t.TempDir(), Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	c := &stubConn{}
	_, action := s.OnOpen(c)
	require.Equal(t, gnet.None, action)
	cn := c.ctx.(*conn)
	require.NoError(t, s.closeStore())

	s.mu.Lock()
	defer s.mu.Unlock()
	before := len(cn.out)
	s.Record([]byte("a change"))
	s.Send(cn.id, wire.ErrorFrame(wire.CodeBadRequest, "stand-in for submitted"), core.WaitConfirm)
	assert.Equal(t, before, len(cn.out), "a confirmation went out for a change the log never took")
	assert.Equal(t, 1, cn.held)
}
