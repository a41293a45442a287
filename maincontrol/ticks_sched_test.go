package maincontrol

import (
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/maincontrol/core"
	"github.com/apollo11/apollo11/wire"
)

// handle feeds one frame to the core as the server does, after it the
// check for a deadline sooner than the next tick.
func handle(t *testing.T, s *Server, peer core.PeerID, typ string, kv ...string) {
	t.Helper()
	b := wire.Begin(nil, wire.Kind(typ))
	for i := 0; i+1 < len(kv); i += 2 {
		b.Str(kv[i], kv[i+1])
	}
	frame, err := b.Finish()
	require.NoError(t, err)
	var dec wire.Decoder
	m, _, err := dec.Decode(frame)
	require.NoError(t, err)
	s.mu.Lock()
	s.core.Handle(peer, m)
	s.wantTick()
	s.mu.Unlock()
}

// An idle server's ticker sleeps until the core's next deadline, at most
// the idle tick; a deadline that an input brings sooner than the next
// tick gets an early tick at that deadline. Every step is a decision on a
// manual clock: no timing is measured.
func TestTick_SleepsUntilTheNextDeadline(t *testing.T) {
	clock := &core.ManualClock{T: time.UnixMilli(1_700_000_000_000)}
	quiet := slog.New(slog.DiscardHandler)
	s, err := newServer(Config{Logger: quiet, Core: core.Config{Clock: clock, Logger: quiet,
		HeartbeatTimeout: 15 * time.Second, HeartbeatInterval: 5 * time.Second, StartTimeout: 400 * time.Millisecond}})
	require.NoError(t, err)
	t.Cleanup(func() {
		if s.timers.early != nil {
			s.timers.early.Stop()
		}
	})
	d, _ := s.OnTick()
	assert.Equal(t, DefaultIdleTick, d, "nothing due: the idle tick")

	const cl, ex = core.PeerID(1), core.PeerID(2)
	s.core.Open(cl)
	handle(t, s, cl, "hello", "req", "h", "client", "test")
	handle(t, s, cl, "submit", "req", "s", "task_type", "x", "delay_ms", "300")
	assert.Equal(t, clock.T.Add(300*time.Millisecond), s.timers.earlyAt, "an early tick when the delay ends")
	d, _ = s.OnTick()
	assert.Equal(t, 300*time.Millisecond, d, "the ticker sleeps until the delay ends")
	assert.True(t, s.timers.earlyAt.IsZero(), "the tick at the delay's end makes the early one needless")

	clock.T = clock.T.Add(300 * time.Millisecond)
	d, _ = s.OnTick()
	assert.Equal(t, DefaultIdleTick, d)

	// An executor: its heartbeat timeout is 15 s away, past the idle
	// tick. It takes the task: the start timeout is 400 ms away.
	s.core.Open(ex)
	handle(t, s, ex, "register", "executor_id", "e1", "task_types", "x", "slots", "1")
	assert.Equal(t, clock.T.Add(400*time.Millisecond), s.timers.earlyAt, "an early tick at the start timeout")
	clock.T = clock.T.Add(100 * time.Millisecond)
	d, _ = s.OnTick()
	assert.Equal(t, 300*time.Millisecond, d)
	clock.T = clock.T.Add(300 * time.Millisecond)
	d, _ = s.OnTick()
	assert.EqualValues(t, 1, s.metrics.startTimeouts.Value(), "the start timeout fired at its time")
	assert.LessOrEqual(t, d, DefaultIdleTick)

	// Work waiting on the ticks (here a snapshot running) is looked at
	// every TickInterval, as before.
	s.mu.Lock()
	s.snap.running = true
	s.mu.Unlock()
	d, _ = s.OnTick()
	assert.Equal(t, DefaultTickInterval, d)
}
