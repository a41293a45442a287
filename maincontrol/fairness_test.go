package maincontrol_test

import (
	"bytes"
	"io"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/maincontrol"
)

// A client sending one request at a time is served within a turn or two of
// the event loop however many connections pipeline requests beside it, and
// a turn gives each busy connection at most Config.ReadChunk of input.
// Task ids count what the loop handled: the gap between two submits the
// witness makes back to back is the number of the flooders' submits handled
// meanwhile. The bound is in frames, not time, so a slow machine cannot
// fail it (nor can the read budget, set out of reach: a slice cut short by
// it is handed back at once, not after a turn). With gnet's 64 KiB default
// a turn was four times as long, and the witness's first submit waited
// behind most of the flood.
func TestFairness_QuietClientWaitsATurnNotABacklog(t *testing.T) {
	t.Parallel()
	const flooders, perFlooder, samples = 8, 50_000, 7
	addr := startServer(t, maincontrol.Config{ReadBudget: time.Minute})
	frame := mustFrame(t, "submit", "task_type", "f")
	burst := bytes.Repeat(frame, perFlooder)
	for range flooders {
		p := clientPeer(t, addr)
		go func() { _, _ = p.c.Write(burst) }()         // ends when the test closes p
		go func() { _, _ = io.Copy(io.Discard, p.c) }() // a flooder that reads is not paused
	}
	w := clientPeer(t, addr)
	submit := func() uint64 {
		m := w.request("submit", "task_type", "w")
		require.Equal(t, "submitted", m.Type(), "got %s", m)
		id, err := strconv.ParseUint(m.Value("task_id"), 10, 64)
		require.NoError(t, err)
		return id
	}
	// Wait until the flood is under way, so every sample is taken in it.
	for submit() < flooders*1000 {
	}
	gaps := make([]uint64, samples)
	for i := range gaps {
		first := submit()
		gaps[i] = submit() - first - 1
	}
	last := submit()
	require.Less(t, last, uint64(flooders*perFlooder), "the flood ended before the witness's samples did: its requests waited behind most of it")
	slices.Sort(gaps)
	perTurn := flooders * (maincontrol.DefaultReadChunk / len(frame))
	assert.LessOrEqual(t, gaps[samples/2], uint64(3*perTurn),
		"median submits handled for others between two of the witness's (gaps %v, a turn is at most %d)", gaps, perTurn)
}
