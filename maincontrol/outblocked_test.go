package maincontrol

import (
	"log/slog"
	"net"
	"testing"
	"time"

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
	s.flow.noteUnsent(cn, c.unsent, 0)
	s.flow.unsentTotal += s.cfg.MaxOutboundTotal // the other peers' share
	s.mu.Unlock()
	for range 1000 {
		require.Equal(t, gnet.None, s.OnTraffic(c))
	}
	assert.Zero(t, c.wakes, "woke itself")
	assert.Len(t, c.in, len(hello)+len(stats), "read while all peers hold too much")

	// The others catch up; at the tick it is woken and reads again.
	s.mu.Lock()
	s.flow.unsentTotal -= s.cfg.MaxOutboundTotal
	s.flow.wakeBlocked()
	assert.True(t, cn.queued, "not woken at the tick")
	s.mu.Unlock()
	require.Equal(t, gnet.None, s.OnTraffic(c))
	assert.Empty(t, c.in)
	assert.Positive(t, c.written, "hello_ok and stats answered")
}

// A connection over its share of unsent output is watched, and cut only
// if it has not sent its peer enough of it by the end of the grace; past
// four times its cap it is cut at once.
func TestOutbound_NoteUnsent(t *testing.T) {
	clock := &core.ManualClock{T: time.Unix(1_700_000_000, 0)}
	cfg, err := Config{Core: core.Config{Clock: clock}}.withDefaults()
	require.NoError(t, err)
	capB, grace := cfg.MaxOutbound, cfg.OutboundGrace
	type step struct {
		after   time.Duration // since the first step
		unsent  int           // gnet's count after the write
		wrote   int           // handed to gnet in this turn
		cut     bool
		watched bool
	}
	cases := []struct {
		name  string
		total int // the other connections' unsent
		steps []step
	}{
		{"under its cap", 0, []step{{0, capB, capB, false, false}}},
		{"over its cap, within the grace", 0, []step{
			{0, capB + 1, capB + 1, false, true},
			{grace / 2, capB + 1, 0, false, true}}},
		{"over its cap, sent nothing", 0, []step{
			{0, capB + 1, capB + 1, false, true},
			{grace, capB + 1, 0, true, false}}},
		{"over its cap, reading", 0, []step{
			{0, capB + 1, capB + 1, false, true},
			{grace, capB + 1 - outboundMinDrain, 0, false, false}}},
		{"reading, still over its cap", 0, []step{
			{0, capB + outboundMinDrain + 1, capB + outboundMinDrain + 1, false, true},
			{grace, capB + 1, 0, false, true}}},
		{"reading while more is sent to it", 0, []step{
			{0, capB + 1, capB + 1, false, true},
			{grace, capB + 1, outboundMinDrain, false, true}}},
		{"caught up", 0, []step{
			{0, capB + 1, capB + 1, false, true},
			{grace, 0, 0, false, false}}},
		{"past four times its cap", 0, []step{{0, 4*capB + 1, 4*capB + 1, true, false}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFlow(&cfg, nil, &wakeList{})
			f.unsentTotal = tc.total
			cn := &conn{}
			start := clock.T
			for i, st := range tc.steps {
				clock.T = start.Add(st.after)
				assert.Equal(t, st.cut, f.noteUnsent(cn, st.unsent, st.wrote) != "", "step %d cut", i)
				_, watched := f.watched[cn]
				assert.Equal(t, st.watched, watched, "step %d watched", i)
			}
		})
	}
}

// Past the total, the connections holding the most are watched until the
// rest would fit; one that reads by the end of the grace is spared.
func TestOutbound_RelieveWatchesTheHeaviest(t *testing.T) {
	clock := &core.ManualClock{T: time.Unix(1_700_000_000, 0)}
	cfg, err := Config{Core: core.Config{Clock: clock}, MaxOutboundTotal: 10 << 20}.withDefaults()
	require.NoError(t, err)
	f := newFlow(&cfg, nil, &wakeList{})
	conns := map[core.PeerID]*conn{}
	var cs []*conn
	for i, mib := range []int{1, 6, 2, 5} { // 14 MiB against 10
		cn := &conn{id: core.PeerID(i + 1)}
		conns[cn.id] = cn
		f.noteUnsent(cn, mib<<20, mib<<20)
		cs = append(cs, cn)
	}
	f.relieveOutbound(conns)
	watched := func(cn *conn) bool { _, ok := f.watched[cn]; return ok }
	assert.True(t, watched(cs[1]), "the heaviest")
	assert.False(t, watched(cs[0]) || watched(cs[2]) || watched(cs[3]), "only until the rest fit")

	clock.T = clock.T.Add(cfg.OutboundGrace)
	f.relieveOutbound(conns) // still over: 6 MiB watched leaves 8 of 14, under 10
	assert.True(t, cs[1].queued, "woken to be judged at the end of its grace")
	assert.False(t, watched(cs[3]))
	assert.Empty(t, f.noteUnsent(cs[1], 5<<20, 0), "it sent 1 MiB: spared")
	assert.Empty(t, f.noteUnsent(cs[3], 5<<20, 0), "not watched: not judged")
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
	s.gate.Record([]byte("a change"))
	s.gate.Send(cn.id, wire.ErrorFrame(wire.CodeBadRequest, "stand-in for submitted"), core.WaitConfirm)
	assert.Equal(t, before, len(cn.out), "a confirmation went out for a change the log never took")
	assert.Equal(t, 1, cn.held)
}
