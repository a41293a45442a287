package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSummarizeStalls(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name     string
		gaps     []time.Duration
		span     time.Duration
		stalls   int
		overMs   int
		stalled  float64
		maxMs    float64
		residual []float64 // per residualBounds, percent
	}{
		{name: "none", span: time.Second, residual: []float64{0, 0, 0, 0}},
		{
			name: "short ones only", gaps: []time.Duration{100 * time.Microsecond, 200 * time.Microsecond},
			span: time.Second, stalls: 2, stalled: 0.03, maxMs: 0.2, residual: []float64{0, 0, 0, 0},
		},
		{
			// 10 ms: 9.5, 9, 8 and 5 ms beyond the bounds; 3 ms: 2.5, 2, 1, 0.
			name: "long ones", gaps: []time.Duration{3 * ms, 10 * ms, 400 * time.Microsecond},
			span: 100 * ms, stalls: 3, overMs: 2, stalled: 13.4, maxMs: 10,
			residual: []float64{12, 11, 9, 5},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := summarizeStalls(tt.gaps, tt.span)
			assert.Equal(t, tt.stalls, st.Stalls)
			assert.Equal(t, tt.overMs, st.OverMs)
			assert.InDelta(t, tt.stalled, st.StalledPct, 1e-9)
			assert.InDelta(t, tt.maxMs, st.MaxMs, 1e-9)
			require.Len(t, st.Residual, len(residualBounds))
			for i, r := range st.Residual {
				assert.InDelta(t, tt.residual[i], r.Pct, 1e-9, "bound %v", r.BoundMs)
			}
			assert.LessOrEqual(t, len(st.TopMs), 8)
			for i := 1; i < len(st.TopMs); i++ {
				assert.GreaterOrEqual(t, st.TopMs[i-1], st.TopMs[i], "longest first")
			}
		})
	}
}

func TestRunStalls_ShortRun(t *testing.T) {
	rep, err := RunStalls(context.Background(), StallsConfig{Duration: 200 * time.Millisecond, Threads: 1})
	require.NoError(t, err)
	require.Len(t, rep.Threads, 1)
	th := rep.Threads[0]
	assert.GreaterOrEqual(t, th.StalledPct, 0.0)
	assert.LessOrEqual(t, th.StalledPct, 100.0)
	assert.InDelta(t, 50.0, rep.ThresholdUs, 1e-9)
	var text bytes.Buffer
	require.NoError(t, rep.WriteText(&text))
	assert.Contains(t, text.String(), "1 threads spinning for 0.2 s")
	var js bytes.Buffer
	require.NoError(t, rep.WriteJSON(&js))
	var back StallsReport
	require.NoError(t, json.Unmarshal(js.Bytes(), &back))
	assert.Equal(t, rep.Threads[0].Stalls, back.Threads[0].Stalls)
}

func TestRunStalls_Refuses(t *testing.T) {
	_, err := RunStalls(context.Background(), StallsConfig{Duration: time.Millisecond, Threads: 1 << 20})
	require.ErrorContains(t, err, "GOMAXPROCS")
	for _, cfg := range []StallsConfig{{Duration: -time.Second}, {Threshold: -1}, {Threads: -1}} {
		_, err = RunStalls(context.Background(), cfg)
		require.ErrorIs(t, err, ErrBadConfig, "%+v", cfg)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = RunStalls(ctx, StallsConfig{Duration: time.Minute, Threads: 1})
	require.ErrorIs(t, err, context.Canceled, "a cancelled probe stops at once")
}

// Cut short, the probe still reports what it saw, over the time it ran.
func TestRunStalls_InterruptedReport(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	rep, err := RunStalls(ctx, StallsConfig{Duration: time.Minute, Threads: 1})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.NotNil(t, rep)
	assert.True(t, rep.Interrupted)
	assert.Less(t, rep.DurationS, 10.0)
	assert.Greater(t, rep.DurationS, 0.1)
	require.Len(t, rep.Threads, 1)
	var text bytes.Buffer
	require.NoError(t, rep.WriteText(&text))
	assert.Contains(t, text.String(), "INTERRUPTED")
}
