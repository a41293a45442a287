package core

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/wire"
)

// countFx is an Effects that counts frames per peer without decoding
// them, and says a peer is backlogged while blocked says so.
type countFx struct {
	frames  map[PeerID]int
	bytes   map[PeerID]int
	blocked map[PeerID]bool
	lsn     uint64
}

func newCountFx() *countFx {
	return &countFx{frames: map[PeerID]int{}, bytes: map[PeerID]int{}, blocked: map[PeerID]bool{}}
}

func (f *countFx) Record([]byte) uint64 { f.lsn++; return f.lsn }
func (f *countFx) Send(peer PeerID, frame []byte, _ Wait) {
	f.frames[peer]++
	f.bytes[peer] += len(frame)
}
func (f *countFx) SendTask(peer PeerID, frame []byte, _ uint64) { f.Send(peer, frame, WaitConfirm) }
func (f *countFx) Close(PeerID)                                 {}
func (f *countFx) Backlogged(peer PeerID) bool                  { return f.blocked[peer] }
func (f *countFx) reset()                                       { clear(f.frames); clear(f.bytes) }
func newCountCore(t testing.TB, fx *countFx, mods ...func(*Config)) *Core {
	cfg := Config{Unlogged: true, Logger: quietLogger(), Clock: &ManualClock{T: time.UnixMilli(1_700_000_000_000)},
		Nonce: func() string { return "0123456789abcdef0123456789abcdef" }}
	for _, m := range mods {
		m(&cfg)
	}
	c, err := New(cfg, fx)
	require.NoError(t, err)
	return c
}

func hello(c *Core, p PeerID) {
	c.Open(p)
	c.Handle(p, msg("hello", "req", "h"))
}

// Four connections each wait 65,536 times for one keyed task that no
// executor serves, then close. Before, each close rescanned the other
// connections' waits once per wait of its own: the loop froze for 13-29 s
// and the watchdog ended the process. Now a close costs its own waits.
func TestCore_ManyWaitsOnOneTaskCloseAtOnce(t *testing.T) {
	fx := newCountFx()
	c := newCountCore(t, fx)
	hello(c, 1)
	c.Handle(1, msg("submit", "req", "s", "task_type", "nobody", "key", "K"))
	wait := msg("submit", "req", "w", "task_type", "nobody", "key", "K", "wait", "true")
	for p := PeerID(2); p <= 5; p++ {
		hello(c, p)
		for range maxWaitsPerConn {
			c.Handle(p, wait)
		}
		assert.Equal(t, maxWaitsPerConn, c.peers[p].waits.n)
		assert.Nil(t, c.peers[p].waits.head.pnext, "one entry per connection and task")
	}
	assert.Len(t, c.waiters.byKey, 4)
	for p := PeerID(2); p <= 5; p++ {
		c.Closed(p)
	}
	assert.Zero(t, c.waiters.total)
	assert.Empty(t, c.waiters.byTask)
	assert.Empty(t, c.waiters.byKey)
}

// Waits are capped over all connections too (--max-waits): 32
// connections held 2.1 million waits and 289 MB before. Past the cap a
// wait=true submit gets unavailable and changes nothing, duplicate or
// not; waits come back as tasks end or connections close.
func TestCore_WaitsCappedOverAllConnections(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxWaits = 100; c.Unlogged = true })
	owner := h.client()
	id := h.submit(owner, "task_type", "nobody", "key", "K")
	var cls []PeerID
	for range 32 {
		cl := h.client()
		cls = append(cls, cl)
		for i := range 10 {
			h.c.Handle(cl, msg("submit", "req", "w"+strconv.Itoa(i), "task_type", "nobody", "key", "K", "wait", "true"))
		}
	}
	assert.Equal(t, 100, h.c.waiters.total)
	refused := 0
	for _, cl := range cls {
		for _, m := range h.fx.frames[cl] {
			if m.Type() == "error" {
				require.Equal(t, string(wire.CodeUnavailable), m.Value("code"))
				require.Contains(t, m.Value("message"), "--max-waits")
				refused++
			}
		}
	}
	assert.Equal(t, 32*10-100, refused)
	tasks := h.c.nextID
	h.send(owner, "submit", "req", "new", "task_type", "nobody", "wait", "true")
	h.expectErr(owner, wire.CodeUnavailable)
	assert.Equal(t, tasks, h.c.nextID, "a refused new submit makes no task")

	h.c.Closed(cls[0])
	h.send(owner, "submit", "req", "back", "task_type", "nobody", "key", "K", "wait", "true")
	assert.Equal(t, "true", h.expect(owner, "submitted").Value("duplicate"), "room again once a connection closed")
	h.send(owner, "cancel", "req", "c", "task_id", itoa(id))
	for range 10 {
		h.c.Tick()
	}
	assert.Zero(t, h.c.waiters.total, "every wait answered")
}

// Ending a task with many waiters sends their done replies a tick's
// budget at a time, not all in one go (which stalled the loop for 10 s and
// took 812 MB), and holds back those of a connection whose unsent output
// is large until it reads.
func TestCore_DonesOfOneTaskPaced(t *testing.T) {
	fx := newCountFx()
	c := newCountCore(t, fx, func(cfg *Config) { cfg.MaxWaits = 1 << 20 })
	hello(c, 1)
	c.Handle(1, msg("submit", "req", "s", "task_type", "nobody", "key", "K"))
	wait := msg("submit", "req", "w", "task_type", "nobody", "key", "K", "wait", "true")
	const peers = 8
	for p := PeerID(2); p < 2+peers; p++ {
		hello(c, p)
		for range maxWaitsPerConn {
			c.Handle(p, wait)
		}
	}
	fx.blocked[2] = true
	fx.reset()
	c.Handle(1, msg("cancel", "req", "c", "task_id", "1"))
	sent := 0
	for p := PeerID(2); p < 2+peers; p++ {
		sent += fx.frames[p]
	}
	assert.LessOrEqual(t, sent, doneFramesPerTick, "one tick's budget when the task ends")
	assert.Positive(t, sent)
	assert.Zero(t, fx.frames[2], "nothing more to a backlogged connection")
	ticks := 0
	for c.waiters.total > maxWaitsPerConn && ticks < 1000 {
		fx.reset()
		c.Tick()
		ticks++
		total := 0
		for p := PeerID(2); p < 2+peers; p++ {
			total += fx.frames[p]
		}
		require.LessOrEqual(t, total, doneFramesPerTick, "tick %d", ticks)
	}
	assert.Equal(t, maxWaitsPerConn, c.waiters.total, "all but the backlogged connection's sent")
	fx.blocked[2] = false
	for c.waiters.total > 0 && ticks < 1000 {
		c.Tick()
		ticks++
	}
	assert.Zero(t, c.waiters.total)
	assert.Zero(t, c.dones.len())
}
