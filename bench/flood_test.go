package bench_test

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/bench"
	"github.com/apollo11/apollo11/maincontrol"
	"github.com/apollo11/apollo11/maincontrol/maincontroltest"
)

func TestRunFlood_AgainstMainControl(t *testing.T) {
	for _, req := range bench.FloodRequests {
		t.Run(req, func(t *testing.T) {
			addr := startMainControl(t, nil)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			rep, err := bench.RunFlood(ctx, bench.FloodConfig{Addr: addr, Flooders: 2, Request: req, Window: 1000,
				Duration: 300 * time.Millisecond, Alone: 100 * time.Millisecond, WitnessInterval: time.Millisecond})
			require.NoError(t, err)
			assert.Positive(t, rep.Alone.Witness.Count)
			assert.Equal(t, rep.Alone.Witness.Count, rep.Alone.WitnessRead.Count)
			assert.Positive(t, rep.Flood.Witness.Count)
			assert.Positive(t, rep.Flood.Answered)
			assert.GreaterOrEqual(t, rep.Flood.Sent, rep.Flood.Answered)
			assert.LessOrEqual(t, rep.Flood.Sent-rep.Flood.Answered, int64(2*1000), "the window holds")
			assert.Zero(t, rep.Flood.ErrorReplies)
			assert.Zero(t, rep.Alone.Answered, "no flood while the witness is alone")
			assert.LessOrEqual(t, rep.Flood.MinAnswered, rep.Flood.MaxAnswered)
			assert.Nil(t, rep.Flood.MainControl, "an in-process main control has no pid of its own")
			assert.Equal(t, 3, rep.Conns)
			assert.False(t, rep.Interrupted)

			var text, js bytes.Buffer
			require.NoError(t, rep.WriteText(&text))
			assert.Contains(t, text.String(), "apollo11-bench flood: 2 connections pipelining "+req)
			assert.Contains(t, text.String(), "pass --pid")
			require.NoError(t, rep.WriteJSON(&js))
			var back map[string]any
			require.NoError(t, json.Unmarshal(js.Bytes(), &back))
			assert.Equal(t, req, back["request"])
			assert.Contains(t, back["flood"], "witness_round_trip")
			assert.Contains(t, back["flood"], "machine_busy", "the phase's cost is inline")
		})
	}
}

// Ctrl-C under the flood returns the report of the part that ran, marked
// as such, with the context's error.
func TestRunFlood_Interrupted(t *testing.T) {
	addr := startMainControl(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Cancelled once the progress bar names the flood, not after a guess
	// at how long a loaded machine takes to get there.
	underFlood := writerFunc(func(p []byte) (int, error) {
		if bytes.Contains(p, []byte("flood [")) {
			cancel()
		}
		return len(p), nil
	})
	rep, err := bench.RunFlood(ctx, bench.FloodConfig{Addr: addr, Flooders: 2, Window: 1000,
		Duration: time.Minute, Alone: 100 * time.Millisecond, Progress: underFlood})
	require.ErrorIs(t, err, context.Canceled)
	require.NotNil(t, rep)
	assert.True(t, rep.Interrupted)
	assert.Positive(t, rep.Flood.Seconds)
	var text bytes.Buffer
	require.NoError(t, rep.WriteText(&text))
	assert.Contains(t, text.String(), "INTERRUPTED")
}

// A main control that goes away under the flood ends the run at once,
// with the report and an error naming the lost connections.
func TestRunFlood_TargetLost(t *testing.T) {
	addr, stop := maincontroltest.Start(t, maincontrol.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var once sync.Once
	stopUnderFlood := writerFunc(func(p []byte) (int, error) {
		if bytes.Contains(p, []byte("flood [")) {
			once.Do(func() { go stop() })
		}
		return len(p), nil
	})
	rep, err := bench.RunFlood(ctx, bench.FloodConfig{Addr: addr, Flooders: 2, Window: 1000,
		Duration: time.Minute, Alone: 100 * time.Millisecond, Progress: stopUnderFlood})
	require.Error(t, err)
	require.NoError(t, ctx.Err(), "ended by the loss, not by the test's timeout")
	assert.Contains(t, err.Error(), "flooders' connections to the main control")
	require.NotNil(t, rep)
	assert.Positive(t, rep.ConnErrors)
	var text bytes.Buffer
	require.NoError(t, rep.WriteText(&text))
	assert.Contains(t, text.String(), "flooders lost during the flood")
}

// writerFunc is an io.Writer made of a function.
type writerFunc func(p []byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

func TestRunFlood_Refuses(t *testing.T) {
	for name, cfg := range map[string]bench.FloodConfig{
		"negative flooders":       {Addr: "127.0.0.1:1", Flooders: -1},
		"negative window":         {Addr: "127.0.0.1:1", Window: -1},
		"unknown request":         {Addr: "127.0.0.1:1", Request: "submit"},
		"pid without addr":        {PID: 1},
		"maincontrol args w/addr": {Addr: "127.0.0.1:1", Args: []string{"--max-frame", "2048"}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := bench.RunFlood(context.Background(), cfg)
			assert.ErrorIs(t, err, bench.ErrBadConfig)
		})
	}
}

// The text report of a run whose main control's figures are known, one
// of whose phases did not run.
func TestFloodReport_WriteText(t *testing.T) {
	mc := &bench.ProcReport{CoreShare: 0.97, RSS: 12 << 20, PeakRSS: 14 << 20}
	rep := &bench.FloodReport{Target: "t", Request: "stats", Flooders: 16, Window: 65536, WitnessIntervalMs: 10,
		KernelArrival: true, Cores: 2, HarnessProcs: 1,
		Alone: bench.FloodPhase{Seconds: 2, Witness: bench.Summary{Count: 190, P50: 0.08, P99: 0.3},
			PhaseCost: bench.PhaseCost{MainControl: mc, MachineBusy: 0.05, OtherShare: 0.02}},
		Flood: bench.FloodPhase{Seconds: 10, Witness: bench.Summary{Count: 60, P50: 120, P99: 190},
			Answered: 1_000_000, AnsweredPerS: 100_000, MinAnswered: 60_000, MaxAnswered: 65_000,
			PhaseCost: bench.PhaseCost{MainControl: mc, MachineBusy: 0.9, OtherShare: 0.15}},
	}
	var b bytes.Buffer
	require.NoError(t, rep.WriteText(&b))
	out := b.String()
	for _, want := range []string{
		"16 connections pipelining stats",
		"at most 65,536 requests unanswered each",
		"alone, 2.0 s",
		"under flood, 10.0 s",
		"reply's arrival at the witness's socket",
		"1,000,000 requests answered = 100,000/s (60,000 to 65,000 per flooder)",
		"cpu alone 97%, under flood 97% of one core; rss 12.0 MiB, peak rss 14.0 MiB",
		"under flood 90% busy (other processes 15%)",
		"WARNING: other load skews this run",
	} {
		assert.Contains(t, out, want)
	}
	assert.NotContains(t, out, "INTERRUPTED")

	rep.Flood = bench.FloodPhase{}
	rep.Interrupted = true
	b.Reset()
	require.NoError(t, rep.WriteText(&b))
	assert.Contains(t, b.String(), "under flood                    not run")
	assert.Contains(t, b.String(), "INTERRUPTED")
	assert.NotContains(t, b.String(), "requests answered")
}
