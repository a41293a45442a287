package core

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestTimerHeap_Order(t *testing.T) {
	rnd := rand.New(rand.NewPCG(3, 4))
	var h timerHeap
	var all []timer
	for round := range 50 {
		for range rnd.IntN(200) {
			tm := timer{at: rnd.Int64N(1000), id: rnd.Uint64N(50), ver: uint64(round)}
			h.add(tm)
			all = append(all, tm)
		}
		now := rnd.Int64N(1100)
		var got []timer
		for {
			tm, ok := h.popDue(now)
			if !ok {
				break
			}
			got = append(got, tm)
		}
		slices.SortStableFunc(all, func(a, b timer) int {
			return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.id, b.id))
		})
		n := 0
		for n < len(all) && all[n].at <= now {
			n++
		}
		require.Len(t, got, n, "round %d", round)
		for i := range got {
			require.Equal(t, all[i].at, got[i].at)
			require.Equal(t, all[i].id, got[i].id)
		}
		all = all[n:]
		require.Len(t, h, len(all))
	}
	_, ok := (&timerHeap{}).popDue(1 << 62)
	require.False(t, ok)
}

// TestTimers_CompactedUnderThroughput: every dispatch (and every start, with a
// timeout) leaves a deadline behind when the task ends early. The heap must stay bounded by
// its live entries, and compaction must keep every live one: delayed tasks
// submitted first still become due after 30,000 quick cycles.
func TestTimers_CompactedUnderThroughput(t *testing.T) {
	clock := &ManualClock{T: time.UnixMilli(1_700_000_000_000)}
	c, _ := benchCore(t, clock)
	const cl, ex = PeerID(1), PeerID(2)
	c.Open(cl)
	c.Handle(cl, msg("hello"))
	const delayed = 5000
	for range delayed {
		c.Handle(cl, msg("submit", "task_type", "later", "delay_ms", "60000"))
	}
	c.Open(ex)
	c.Handle(ex, msg("register", "executor_id", "e1", "task_types", "echo,later", "slots", "65536"))
	submit := msg("submit", "task_type", "echo")
	started := msg("started", "task_id", "0", "version", "1")
	result := msg("result", "task_id", "0", "version", "1", "status", "succeeded")
	var buf []byte
	first := c.nextID
	for i := range uint64(30_000) {
		c.Handle(cl, submit)
		id := first + i
		buf = idField(started, 1, buf, id)
		c.Handle(ex, started)
		buf = idField(result, 1, buf, id)
		c.Handle(ex, result)
	}
	require.Equal(t, 30_000, c.counts[Succeeded])
	require.LessOrEqual(t, len(c.timers), 2*delayed+2,
		"30,000 start deadlines were left behind; the heap keeps about twice its %d live ones", delayed)

	clock.T = clock.T.Add(time.Minute)
	c.Handle(ex, msg("heartbeat", "seq", "1")) // not lost while the clock jumped
	c.Tick()
	require.Equal(t, delayed, c.counts[Dispatched], "every delayed task became due and was dispatched")
}
