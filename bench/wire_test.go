package bench_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/bench"
)

// Our main control answers every probe as wire-v1 says, and survives.
func TestRunWire_AgainstMainControl(t *testing.T) {
	addr := startMainControl(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rep, err := bench.RunWire(ctx, bench.WireConfig{Addr: addr, Rate: 400, Duration: 1500 * time.Millisecond,
		Seed: 7, Probe: -1, Timeout: time.Second, Linger: 100 * time.Millisecond})
	require.NoError(t, err)
	var text bytes.Buffer
	require.NoError(t, rep.WriteText(&text))
	assert.EqualValues(t, 600, rep.Probes)
	assert.Zero(t, rep.Unexpected, text.String())
	assert.Zero(t, rep.DialErrors)
	assert.True(t, rep.AliveAfter)
	assert.Positive(t, rep.Outcomes["error:malformed+close"])
	assert.Positive(t, rep.Outcomes["stats"])
}

// The same seed and index make the same probe: a finding can be replayed.
func TestRunWire_ProbeReplays(t *testing.T) {
	addr := startMainControl(t, nil)
	cfg := bench.WireConfig{Addr: addr, Seed: 3, Probe: 11, Timeout: time.Second, Linger: 50 * time.Millisecond}
	a, err := bench.RunWire(context.Background(), cfg)
	require.NoError(t, err)
	b, err := bench.RunWire(context.Background(), cfg)
	require.NoError(t, err)
	assert.EqualValues(t, 1, a.Probes)
	assert.Equal(t, a.Outcomes, b.Outcomes)
	for i := range a.Cases {
		assert.Equal(t, a.Cases[i].Probes, b.Cases[i].Probes, a.Cases[i].Name)
	}
}
