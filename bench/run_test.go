package bench_test

import (
	"bytes"
	"context"
	"encoding/json"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/bench"
)

func TestRun_ClosedLoop(t *testing.T) {
	addr := startMainControl(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rep, err := bench.Run(ctx, bench.Config{Addr: addr, Producers: 2, Executors: 2, Slots: 8, Tasks: 500,
		Wait: true, Window: 50, Payload: 32})
	require.NoError(t, err)
	assert.EqualValues(t, 500, rep.Submitted)
	assert.EqualValues(t, 500, rep.Accepted)
	assert.EqualValues(t, 500, rep.Completed)
	assert.Zero(t, rep.Errors)
	assert.Zero(t, rep.Failed)
	assert.EqualValues(t, 500, rep.SubmitToDone.Count)
	assert.EqualValues(t, 500, rep.SubmitToDispatch.Count)
	assert.Greater(t, rep.Throughput, 0.0)
	assert.Nil(t, rep.MainControl, "an in-process main control has no pid of its own")
	assert.Greater(t, rep.Harness.CPUSeconds, 0.0)
	assert.LessOrEqual(t, rep.SubmitToDispatch.P50, rep.SubmitToDone.P50)
	// The harness's share and the machine's are over one interval, which
	// holds the run.
	assert.GreaterOrEqual(t, rep.CPUInterval, rep.Elapsed)
	assert.InDelta(t, rep.Harness.CPUSeconds/rep.CPUInterval, rep.Harness.CoreShare, 1e-9)
	assert.Zero(t, rep.ConnErrors)
	assert.Equal(t, 4, rep.Conns, "2 producers, 2 executors")

	var text, js bytes.Buffer
	require.NoError(t, rep.WriteText(&text))
	assert.Contains(t, text.String(), "submit -> done")
	require.NoError(t, rep.WriteJSON(&js))
	var back map[string]any
	require.NoError(t, json.Unmarshal(js.Bytes(), &back))
	assert.EqualValues(t, 500, back["completed"])
}

func TestRun_OpenLoopWithoutWait(t *testing.T) {
	addr := startMainControl(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rep, err := bench.Run(ctx, bench.Config{Addr: addr, Producers: 3, Executors: 2, Slots: 4,
		Rate: 1000, Duration: 300 * time.Millisecond})
	require.NoError(t, err)
	assert.EqualValues(t, 300, rep.Submitted)
	assert.EqualValues(t, 300, rep.Completed, "every accepted task reached an executor")
	assert.Equal(t, "open", rep.Loop)
	assert.Zero(t, rep.SubmitToDone.Count, "no done without wait=true")
	assert.EqualValues(t, 300, rep.SubmitToDispatch.Count)
	assert.EqualValues(t, 300, rep.SentToDispatch.Count)
	if runtime.GOOS == "linux" {
		// The kernel stamped each task's arrival before the harness read it.
		assert.EqualValues(t, 300, rep.SentToArrival.Count)
		assert.LessOrEqual(t, rep.SentToArrival.P50, rep.SentToDispatch.P50)
	}
	var sum uint64
	for _, s := range rep.Timeline {
		sum += s.Submitted
	}
	assert.EqualValues(t, 300, sum)
}
