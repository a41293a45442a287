package maincontrol

import (
	"bytes"
	"log/slog"
	"testing"
	"time"

	"github.com/panjf2000/gnet/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/wire"
)

// A quiet client's request waits for one share of input per busy
// connection, not for their backlogs. Each flooder below holds a backlog
// gnet already read (as after a pause or a turn cut short), and the read
// budget is out of reach, so only the share can end a turn. The count is
// in frames, not time. Before, each flooder's turn took its whole backlog:
// with the 5 ms budget, a quiet client's frame waited 5 ms per flooder.
func TestReadFrames_BacklogIsHandledAShareATurn(t *testing.T) {
	const flooders, backlogShares = 4, 8
	s, err := newServer(Config{Logger: slog.New(slog.DiscardHandler), ReadBudget: time.Hour})
	require.NoError(t, err)
	share := turnShare(s.cfg.ReadChunk)
	frame := func(typ string, kv ...string) []byte {
		m := wire.NewMessage(wire.Kind(typ))
		for i := 0; i+1 < len(kv); i += 2 {
			m.Set(kv[i], kv[i+1])
		}
		b, err := wire.AppendFrame(nil, m)
		require.NoError(t, err)
		return b
	}
	hello, stats := frame("hello"), frame("stats", "req", "s")
	open := func(in []byte) *stubConn {
		c := &stubConn{}
		_, action := s.OnOpen(c)
		require.Equal(t, gnet.None, action)
		c.in = append(bytes.Clone(hello), in...)
		return c
	}
	backlog := bytes.Repeat(stats, backlogShares*share/len(stats))
	var fs []*stubConn
	for range flooders {
		fs = append(fs, open(backlog))
	}
	witness := open(frame("stats", "req", "w"))

	// One turn of the loop: each flooder, then the witness.
	handled := 0
	for _, c := range fs {
		before := len(c.in)
		require.Equal(t, gnet.None, s.OnTraffic(c))
		handled += (before - len(c.in)) / len(stats)
		assert.Equal(t, 1, c.wakes, "a flooder with input left asks to be woken")
	}
	require.Equal(t, gnet.None, s.OnTraffic(witness))
	assert.Empty(t, witness.in)
	assert.Positive(t, witness.written, "the witness was answered in its turn")
	perTurn := share/len(stats) + 1
	assert.LessOrEqual(t, handled, flooders*perTurn,
		"the witness waited behind %d flooders' frames; one share each is %d", handled, perTurn)

	// The backlogs still drain, a share at a time.
	for _, c := range fs {
		turns := 1
		for ; len(c.in) > 0 && turns <= backlogShares+2; turns++ {
			require.Equal(t, gnet.None, s.OnTraffic(c))
		}
		assert.Empty(t, c.in, "a backlog left after %d turns", turns)
		assert.GreaterOrEqual(t, turns, backlogShares, "a backlog of %d shares went in fewer turns", backlogShares)
	}
}

// The share is what gnet reads in a turn: the chunk rounded up to a power
// of two, at least 1 KiB. A smaller share would let a busy connection's
// backlog grow each turn.
func TestTurnShare_IsGnetsChunk(t *testing.T) {
	for chunk, want := range map[int]int{1: 1 << 10, 1 << 10: 1 << 10, 1<<10 + 1: 2 << 10, 16 << 10: 16 << 10, 20_000: 32 << 10} {
		assert.Equal(t, want, turnShare(chunk), "chunk %d", chunk)
	}
}
