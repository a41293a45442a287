package core

import (
	"fmt"
	"log/slog"
	"maps"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/internal/syncbuf"
	"github.com/apollo11/apollo11/wire"
)

// testStateCap is the cap of the size tests: "k" with a value of
// fillAtCap bytes fills it exactly.
const (
	testStateCap = 1000
	fillAtCap    = testStateCap - 1 - StateKeyOverhead
)

// succeed runs one task of type x on ex through to a result with kv and
// returns its result_ack.
func (h *harness) succeed(cl, ex PeerID, kv ...string) (uint64, *wire.Message) {
	h.t.Helper()
	id := h.submit(cl, "task_type", "x")
	got, v := h.task(ex)
	require.Equal(h.t, id, got)
	h.start(ex, id, v)
	return id, h.result(ex, id, v, "succeeded", kv...)
}

// checkStateBytes requires the running size to be what a recount finds.
func (h *harness) checkStateBytes() {
	h.t.Helper()
	require.Equal(h.t, h.c.countStateBytes(), h.c.StateBytes())
}

func TestStateEntryBytes(t *testing.T) {
	for _, tc := range []struct {
		name, value string
		want        int64
	}{
		{"k", "", 1 + StateValueFloor + StateKeyOverhead},
		{"k", "9", 1 + StateValueFloor + StateKeyOverhead},
		{"k", "-9223372036854775808", 1 + 20 + StateKeyOverhead},
		{"key", strings.Repeat("v", 21), 3 + 21 + StateKeyOverhead},
	} {
		assert.Equal(t, tc.want, stateEntryBytes(tc.name, tc.value), "%s=%q", tc.name, tc.value)
	}
}

// Spec section 4, read with a cap on the shared state (docs/protocol.md,
// "Shared state size"): a succeeded result whose state changes take the
// size past --max-state-bytes is an illegal_value, naming the first key
// that does, in the result's order; nothing of it applies. Changes that
// shrink or keep the size pass at the cap.
func TestCore_StateCap(t *testing.T) {
	atCap := []string{"state.set.k", strings.Repeat("v", fillAtCap)}
	// "k" and the counter "n" (85 bytes) fill the cap.
	withCounter := []string{"state.set.k", strings.Repeat("v", fillAtCap-85), "state.set.n", "9"}
	tests := []struct {
		name string
		cap  int
		pre  []string // an accepted result first, when set
		kv   []string
		bad  string // "": accepted
	}{
		{name: "exactly at the cap", kv: atCap},
		{name: "one byte over", kv: []string{"state.set.k", strings.Repeat("v", fillAtCap+1)}, bad: "state.set.k"},
		{name: "first key past the cap as sent",
			kv:  []string{"state.set.a", "1", "state.set.b", strings.Repeat("v", fillAtCap), "state.set.c", strings.Repeat("v", 900)},
			bad: "state.set.b"},
		{name: "new key at the cap", pre: atCap, kv: []string{"state.set.j", ""}, bad: "state.set.j"},
		{name: "add of a new key at the cap", pre: atCap, kv: []string{"state.add.j", "1"}, bad: "state.add.j"},
		{name: "longer value at the cap", pre: atCap, kv: []string{"state.set.k", strings.Repeat("w", fillAtCap+1)}, bad: "state.set.k"},
		{name: "shrink at the cap", pre: atCap, kv: []string{"state.set.k", "short"}},
		{name: "same size at the cap", pre: atCap, kv: []string{"state.set.k", strings.Repeat("w", fillAtCap)}},
		{name: "add to an existing key at the cap", pre: withCounter, kv: []string{"state.add.n", "1"}},
		{name: "add to the longest integer at the cap", pre: withCounter,
			kv: []string{"state.add.n", "-9223372036854775807", "state.add.n2", "1"}, bad: "state.add.n2"},
		{name: "shrink first makes room", pre: atCap,
			kv: []string{"state.set.k", strings.Repeat("v", fillAtCap-85), "state.set.j", "x"}},
		{name: "shrink after the growth comes too late", pre: atCap,
			kv: []string{"state.set.j", "x", "state.set.k", strings.Repeat("v", fillAtCap-85)}, bad: "state.set.j"},
		{name: "cap before a later bad add",
			kv: []string{"state.set.k", strings.Repeat("v", fillAtCap+1), "state.add.x", "y"}, bad: "state.set.k"},
		{name: "bad add before the cap",
			kv: []string{"state.add.x", "y", "state.set.k", strings.Repeat("v", fillAtCap+1)}, bad: "state.add.x"},
		{name: "no cap", cap: -1, kv: []string{"state.set.k", strings.Repeat("v", 10*testStateCap)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			limit := tc.cap
			if limit == 0 {
				limit = testStateCap
			}
			h := newHarness(t, func(c *Config) { c.MaxStateBytes = limit })
			cl := h.client()
			ex := h.executor("e1", "x", 1)
			if tc.pre != nil {
				_, ack := h.succeed(cl, ex, tc.pre...)
				require.Equal(t, "true", ack.Value("accepted"), "ack %s", ack)
			}
			before, ver, size := maps.Clone(h.c.state), h.c.stateVer, h.c.StateBytes()
			id, ack := h.succeed(cl, ex, append(tc.kv, "out.o", "1")...)
			if tc.bad == "" {
				assert.Equal(t, "true", ack.Value("accepted"), "ack %s", ack)
				assert.Equal(t, Succeeded, h.state(id))
				assert.Equal(t, ver+1, h.c.stateVer)
				if tc.cap == 0 {
					assert.LessOrEqual(t, h.c.StateBytes(), int64(testStateCap))
				}
			} else {
				assert.Equal(t, "false", ack.Value("accepted"))
				assert.Equal(t, string(wire.ReasonIllegalValue), ack.Value("reason"))
				assert.Equal(t, Failed, h.state(id), "failed, not retried")
				assert.Equal(t, "illegal_value "+tc.bad, h.get(id).errText())
				out, _ := h.get(id).out()
				assert.Empty(t, out, "nothing applied")
				assert.Equal(t, before, h.c.state, "nothing applied")
				assert.Equal(t, ver, h.c.stateVer)
				assert.Equal(t, size, h.c.StateBytes())
			}
			h.checkStateBytes()
			h.checkReplay()
		})
	}
}

// State changes on a failed result are not checked (spec section 4), the
// size included: they are ignored.
func TestCore_StateCapFailedResult(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxStateBytes = testStateCap })
	cl := h.client()
	ex := h.executor("e1", "x", 1)
	id := h.submit(cl, "task_type", "x", "max_attempts", "1")
	_, v := h.task(ex)
	h.start(ex, id, v)
	h.accepted(ex, id, v, "failed", "state.set.k", strings.Repeat("v", 2*testStateCap), "error", "boom")
	assert.Equal(t, "boom", h.get(id).errText())
	assert.Empty(t, h.c.state)
	assert.Zero(t, h.c.StateBytes())
}

// The size is counted anew at every start (the log's records replay
// unchecked: they were accepted once). A cap lowered since leaves the
// larger state in place, warns, and refuses only growth.
func TestCore_StateCapLoweredAcrossRestart(t *testing.T) {
	for _, fromSnapshot := range []bool{false, true} {
		name := "log"
		if fromSnapshot {
			name = "snapshot"
		}
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, func(c *Config) { c.MaxStateBytes = 3 * testStateCap })
			cl := h.client()
			ex := h.executor("e1", "x", 1)
			_, ack := h.succeed(cl, ex, "state.set.k", strings.Repeat("v", fillAtCap), "state.set.k2", strings.Repeat("v", fillAtCap), "state.set.n", "9")
			require.Equal(t, "true", ack.Value("accepted"), "ack %s", ack)
			size := h.c.StateBytes()
			require.Equal(t, int64(2*testStateCap+1+85), size, "k2 counts one byte more")
			state := maps.Clone(h.c.state)

			var buf syncbuf.Buffer
			h.cfg.MaxStateBytes = testStateCap
			h.cfg.Logger = slog.New(slog.NewTextHandler(&buf, nil))
			if fromSnapshot {
				h.restartFrom(snapshotEntries(t, h.c), len(h.fx.records))
			} else {
				h.restart()
			}
			assert.Equal(t, state, h.c.state, "kept, nothing refused on replay")
			assert.Equal(t, size, h.c.StateBytes())
			assert.Contains(t, buf.String(), "level=WARN msg=\"shared state is larger than --max-state-bytes")
			assert.Contains(t, buf.String(), "state_bytes=2086 max_state_bytes=1000 keys=3")

			cl, ex = h.client(), h.executor("e1", "x", 1)
			_, ack = h.succeed(cl, ex, "state.set.j", "")
			assert.Equal(t, "false", ack.Value("accepted"), "growth refused")
			assert.Equal(t, size, h.c.StateBytes())
			_, ack = h.succeed(cl, ex, "state.add.n", "1", "state.set.k", strings.Repeat("w", fillAtCap))
			assert.Equal(t, "true", ack.Value("accepted"), "same size: accepted (ack %s)", ack)
			_, ack = h.succeed(cl, ex, "state.set.k", "")
			assert.Equal(t, "true", ack.Value("accepted"), "shrink: accepted (ack %s)", ack)
			assert.Less(t, h.c.StateBytes(), size)
			_, ack = h.succeed(cl, ex, "state.set.k", strings.Repeat("v", fillAtCap))
			assert.Equal(t, "false", ack.Value("accepted"), "no growth back past the size held (ack %s)", ack)
			h.checkStateBytes()
		})
	}
}

// A cap still over the state at start says nothing; stats shows the size.
func TestCore_StateCapRestartQuietUnderCap(t *testing.T) {
	var buf syncbuf.Buffer
	h := newHarness(t, func(c *Config) {
		c.MaxStateBytes = testStateCap
		c.Logger = slog.New(slog.NewTextHandler(&buf, nil))
	})
	cl := h.client()
	ex := h.executor("e1", "x", 1)
	_, ack := h.succeed(cl, ex, "state.set.k", strings.Repeat("v", fillAtCap))
	require.Equal(t, "true", ack.Value("accepted"))
	h.restart()
	assert.Equal(t, int64(testStateCap), h.c.StateBytes())
	assert.NotContains(t, buf.String(), "max-state-bytes")
	cl = h.client()
	h.send(cl, "stats", "req", "s")
	assert.Equal(t, "1000", h.expect(cl, "stats").Value("state_bytes"))
}

func TestConfig_MaxStateBytes(t *testing.T) {
	for _, tc := range []struct{ in, want int }{
		{0, DefaultMaxStateBytes},
		{-1, -1},
		{1, 1},
	} {
		c, err := Config{MaxStateBytes: tc.in}.withDefaults()
		require.NoError(t, err)
		assert.Equal(t, tc.want, c.MaxStateBytes, "MaxStateBytes %d", tc.in)
	}
	assert.Equal(t, 64<<20, DefaultMaxStateBytes)
}

// The appendix of docs/protocol.md and docs/operations.md state the cap's numbers
// as the code has them.
func TestProtocolDoc_StateCap(t *testing.T) {
	b, err := os.ReadFile("../../docs/protocol.md")
	require.NoError(t, err)
	doc := string(b)
	i := strings.Index(doc, "- **Shared state size.**")
	require.Greater(t, i, strings.Index(doc, "## Appendix: apollo11's readings"), "a reading of the appendix")
	bullet := doc[i:]
	bullet = strings.Join(strings.Fields(bullet[:strings.Index(bullet[1:], "\n- ")+1]), " ")
	for _, want := range []string{
		"`--max-state-bytes`, default " + fmt.Sprint(DefaultMaxStateBytes>>20) + " MiB; `-1` for no cap",
		"its value (at least " + fmt.Sprint(StateValueFloor) + " bytes",
		fmt.Sprint(StateKeyOverhead) + " bytes more",
		"`reason=illegal_value`", "`error=illegal_value <key>`", "result's key order",
		"never refused when replayed", "`state_bytes`",
	} {
		assert.Contains(t, bullet, want)
	}
	assert.Contains(t, doc, "`available`, `state_bytes`", "listed among the extra stats keys")

	b, err = os.ReadFile("../../docs/operations.md")
	require.NoError(t, err)
	ops := strings.Join(strings.Fields(string(b)), " ")
	assert.Contains(t, ops, "`--max-state-bytes` ("+fmt.Sprint(DefaultMaxStateBytes>>20)+" MiB) caps its size")
	assert.Contains(t, ops, "`apollo11_state_bytes`")
	assert.Contains(t, ops, fmt.Sprintf("its name plus %d bytes at least", StateValueFloor+StateKeyOverhead))
}
