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

// A tick that comes long after the one before tells the core it stalled:
// an executor that registered before a 20 s stall (longer than the 15 s
// heartbeat timeout) is not lost at the tick that ends it.
func TestOnTick_StallIsNotSilence(t *testing.T) {
	clock := &core.ManualClock{T: time.UnixMilli(1_700_000_000_000)}
	s, err := newServer(Config{Logger: slog.New(slog.DiscardHandler),
		Core: core.Config{Clock: clock, Logger: slog.New(slog.DiscardHandler)}})
	require.NoError(t, err)
	const ex = core.PeerID(1)
	s.core.Open(ex)
	frame := wire.Begin(nil, "register")
	frame.Str("executor_id", "e1")
	frame.Str("task_types", "x")
	frame.Uint("slots", 1)
	b, err := frame.Finish()
	require.NoError(t, err)
	var dec wire.Decoder
	m, _, err := dec.Decode(b)
	require.NoError(t, err)
	s.core.Handle(ex, m)
	require.Len(t, s.core.Executors(), 1)

	s.OnTick()
	clock.T = clock.T.Add(20 * time.Second)
	s.OnTick()
	assert.Len(t, s.core.Executors(), 1, "the stall is not the executor's silence")
	for range 800 { // 16 s of ticks every 20 ms: silence the core could hear
		clock.T = clock.T.Add(20 * time.Millisecond)
		s.OnTick()
	}
	assert.Empty(t, s.core.Executors(), "lost after a heartbeat timeout of silence outside the stall")
}
