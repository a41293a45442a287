package bench_test

import (
	"bytes"
	"context"
	"io"
	"math"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/bench"
	"github.com/apollo11/apollo11/client"
	"github.com/apollo11/apollo11/internal/patience"
	"github.com/apollo11/apollo11/maincontrol"
	"github.com/apollo11/apollo11/wire"
)

// Our main control answers every probe as wire-v1 says, and survives.
func TestRunWire_AgainstMainControl(t *testing.T) {
	addr := startMainControl(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), patience.Scale(30*time.Second))
	defer cancel()
	// Timeouts scale: a busy machine answers, and closes, late but not wrongly.
	rep, err := bench.RunWire(ctx, bench.WireConfig{Addr: addr, Rate: 400, Duration: 1500 * time.Millisecond,
		Seed: 7, Probe: -1, Timeout: patience.Scale(time.Second), Linger: patience.Scale(100 * time.Millisecond)})
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
	cfg := bench.WireConfig{Addr: addr, Seed: 3, Probe: 11, Timeout: patience.Scale(time.Second), Linger: 50 * time.Millisecond}
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

// servePeer runs serve on every connection to a new loopback listener
// until the test ends, and returns its address.
func servePeer(t *testing.T, serve func(c net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				serve(c)
			}()
		}
	}()
	return ln.Addr().String()
}

// fakePeer serves a welcome (given as key, value pairs) and answers hello
// and stats, echoing req unless wrongReq.
func fakePeer(t *testing.T, welcome []string, wrongReq bool) string {
	return servePeer(t, func(c net.Conn) {
		sendFrame(c, "welcome", welcome...)
		r := wire.NewReader(c, 1<<20)
		for {
			m, err := r.Next()
			if err != nil {
				return
			}
			req := m.Value("req")
			if wrongReq {
				req = "zzz"
			}
			switch m.Type() {
			case "hello":
				sendFrame(c, "hello_ok", "req", m.Value("req"))
			case "stats":
				sendFrame(c, "stats", "req", req, "executors", "0", "state_version", "0", "uptime_ms", "1")
			}
		}
	})
}

// bench wire checks what a peer writing its own implementation gets wrong
// first: a welcome without its keys, and replies whose req is not the
// request's (spec section 3).
func TestRunWire_WelcomeAndReq(t *testing.T) {
	good := []string{"proto", "1", "server", "x/1", "nonce", "0123456789abcdef0123456789abcdef", "auth", "none", "max_frame", "1048576"}
	run := func(addr string) *bench.WireReport {
		rep, err := bench.RunWire(context.Background(), bench.WireConfig{Addr: addr, Rate: 100, Duration: 300 * time.Millisecond,
			Seed: 1, Probe: -1, Timeout: patience.Scale(500 * time.Millisecond), Linger: 20 * time.Millisecond, Cases: "valid stats"})
		require.NoError(t, err)
		return rep
	}
	rep := run(fakePeer(t, good, false))
	assert.Zero(t, rep.Unexpected, "%v", rep.Outcomes)
	assert.Positive(t, rep.Outcomes["stats"])

	rep = run(fakePeer(t, good, true))
	assert.Positive(t, rep.Unexpected)
	assert.Positive(t, rep.Outcomes["stats+wrong-req"], "%v", rep.Outcomes)

	rep = run(fakePeer(t, []string{"proto", "7"}, false))
	assert.Positive(t, rep.Unexpected)
	assert.Positive(t, rep.Outcomes["bad welcome: proto is not 1"], "%v", rep.Outcomes)
	rep = run(fakePeer(t, []string{"proto", "1", "auth", "none", "max_frame", "1048576"}, false))
	assert.Positive(t, rep.Outcomes["bad welcome: nonce is not 32 lower-case hex characters"], "%v", rep.Outcomes)
}

// sendFrame writes one frame of the fake peers; a frame that cannot be
// encoded is not sent.
func sendFrame(c net.Conn, typ string, kv ...string) {
	b := wire.Begin(nil, wire.Kind(typ))
	for i := 0; i+1 < len(kv); i += 2 {
		b.Str(kv[i], kv[i+1])
	}
	if f, err := b.Finish(); err == nil {
		_, _ = c.Write(f)
	}
}

// silentPeer serves a welcome, answers hello, then reads and ignores
// everything: the peer that hangs its clients on damaged frames.
func silentPeer(t *testing.T) string {
	return servePeer(t, func(c net.Conn) {
		sendFrame(c, "welcome", "proto", "1", "server", "x/1", "nonce", "0123456789abcdef0123456789abcdef",
			"auth", "none", "max_frame", "1048576")
		m, err := wire.NewReader(c, 1<<20).Next()
		if err != nil {
			return
		}
		sendFrame(c, "hello_ok", "req", m.Value("req"))
		_, _ = io.Copy(io.Discard, c) // until the harness closes
	})
}

// A peer that silently ignores damaged frames hangs its clients: the
// damaged-frame cases count its timeouts as unexpected.
func TestRunWire_AnyRejectsAHang(t *testing.T) {
	addr := silentPeer(t)
	for _, cases := range []string{"random bytes", "bit flip"} {
		rep, err := bench.RunWire(context.Background(), bench.WireConfig{Addr: addr, Rate: 40, Duration: 100 * time.Millisecond,
			Seed: 1, Probe: -1, Timeout: patience.Scale(200 * time.Millisecond), Linger: 20 * time.Millisecond, Cases: cases})
		require.NoError(t, err)
		assert.EqualValues(t, 4, rep.Probes, cases)
		assert.EqualValues(t, 4, rep.Outcomes["timeout"], "%s: %v", cases, rep.Outcomes)
		assert.Equal(t, rep.Probes, rep.Unexpected, cases)
	}
}

// The probes follow the max_frame the peer announces (spec section 1): a
// small one makes the 1025-key probe frame_too_large, the largest one
// still gets oversize headers, and a conformant peer has no unexpected
// answer either way.
func TestRunWire_FollowsMaxFrame(t *testing.T) {
	for _, tc := range []struct {
		maxFrame  int
		keysReply string // what the 1025-key probe (some 7 KB) must get
	}{
		{1024, "error:frame_too_large+close"},
		{math.MaxInt32, "error:malformed+close"},
	} {
		addr := startMainControl(t, func(c *maincontrol.Config) { c.Core.MaxFrame = tc.maxFrame })
		for _, cases := range []string{"1025 keys", "oversize header", ""} {
			rep, err := bench.RunWire(context.Background(), bench.WireConfig{Addr: addr, Rate: 100, Duration: 200 * time.Millisecond,
				Seed: 5, Probe: -1, Timeout: patience.Scale(time.Second), Linger: 50 * time.Millisecond, Cases: cases})
			require.NoError(t, err)
			var text bytes.Buffer
			require.NoError(t, rep.WriteText(&text))
			assert.EqualValues(t, tc.maxFrame, rep.MaxFrame)
			assert.Zero(t, rep.Unexpected, "max_frame %d, cases %q:\n%s", tc.maxFrame, cases, text.String())
			switch cases {
			case "1025 keys":
				assert.EqualValues(t, 20, rep.Outcomes[tc.keysReply], "%v", rep.Outcomes)
			case "oversize header":
				assert.EqualValues(t, 20, rep.Outcomes["error:frame_too_large+close"], "%v", rep.Outcomes)
			}
		}
	}
}

// A peer whose max_frame is the uint32 maximum, or more, cannot be sent an
// oversize header: that case is left out and said so, not failed.
func TestRunWire_NoOversizeAtUint32Max(t *testing.T) {
	for _, maxFrame := range []string{"4294967295", "4294967296", "18446744073709551615"} {
		t.Run(maxFrame, func(t *testing.T) { noOversize(t, maxFrame) })
	}
}

func noOversize(t *testing.T, maxFrame string) {
	welcome := []string{"proto", "1", "server", "x/1", "nonce", "0123456789abcdef0123456789abcdef", "auth", "none",
		"max_frame", maxFrame}
	addr := fakePeer(t, welcome, false)
	cfg := bench.WireConfig{Addr: addr, Rate: 100, Duration: 100 * time.Millisecond, Seed: 1, Probe: -1,
		Timeout: patience.Scale(300 * time.Millisecond), Linger: 20 * time.Millisecond, Cases: "valid stats"}
	rep, err := bench.RunWire(context.Background(), cfg)
	require.NoError(t, err)
	assert.EqualValues(t, uint64(math.MaxUint32), rep.MaxFrame)
	assert.Empty(t, rep.Skipped, "not asked for")
	cfg.Cases = "o" // "oversize header" and others
	rep, err = bench.RunWire(context.Background(), cfg)
	require.NoError(t, err)
	require.Len(t, rep.Skipped, 1)
	assert.Contains(t, rep.Skipped[0], "oversize header")
	for _, c := range rep.Cases {
		assert.NotEqual(t, "oversize header", c.Name)
	}
	cfg.Cases = "oversize"
	_, err = bench.RunWire(context.Background(), cfg)
	assert.ErrorIs(t, err, bench.ErrBadConfig)
}

// The submit probes create tasks nobody serves; the run cancels every one
// it created, mutated submits' other task types included, so the peer is
// left with no pending task of the run's.
func TestRunWire_CancelsTheTasksItCreated(t *testing.T) {
	addr := startMainControl(t, nil)
	var created int64
	for _, cases := range []string{"valid submit", "bit flip"} {
		rep, err := bench.RunWire(context.Background(), bench.WireConfig{Addr: addr, Rate: 200, Duration: 250 * time.Millisecond,
			Seed: 9, Probe: -1, Timeout: patience.Scale(time.Second), Linger: 20 * time.Millisecond, Cases: cases})
		require.NoError(t, err)
		assert.Zero(t, rep.Unexpected, "%v", rep.Outcomes)
		assert.Positive(t, rep.TasksCreated, cases)
		assert.Equal(t, rep.TasksCreated, rep.TasksCancelled, cases)
		assert.Empty(t, rep.TasksLeft, cases)
		assert.Empty(t, rep.CleanupError, cases)
		created += rep.TasksCreated
	}
	cl, err := client.Dial(context.Background(), addr, client.Options{})
	require.NoError(t, err)
	defer cl.Close()
	st, err := cl.Stats(context.Background())
	require.NoError(t, err)
	assert.Zero(t, st.Tasks["pending"], "%v", st.Tasks)
	assert.EqualValues(t, created, st.Tasks["cancelled"], "%v", st.Tasks)
}

// A peer that answers register with something other than registered or
// an error is named as answering out of turn, not as refusing.
func TestDialExecutor_UnexpectedReply(t *testing.T) {
	addr := servePeer(t, func(c net.Conn) {
		sendFrame(c, "welcome", "proto", "1", "nonce", "0123456789abcdef0123456789abcdef", "auth", "none")
		if _, err := wire.NewReader(c, 1<<20).Next(); err != nil {
			return
		}
		sendFrame(c, "hello_ok")
		_, _ = io.Copy(io.Discard, c)
	})
	_, err := bench.DialExecutor(bench.ExecutorOptions{Addr: addr, ID: "x", Types: []string{"t"}, Timeout: 2 * time.Second})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "unexpected reply hello_ok to register")
	assert.NotErrorIs(t, err, bench.ErrRefused)
}
