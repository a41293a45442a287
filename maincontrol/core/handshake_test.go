package core

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/apollo11/apollo11/auth"
	"github.com/apollo11/apollo11/internal/syncbuf"
	"github.com/apollo11/apollo11/wire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Tests for the connection life of spec section 3.

func TestCore_Welcome(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Nonce = nil; c.Version = "1.2.3"; c.MaxFrame = 4096 })
	h.c.Open(1)
	h.c.Open(2)
	w1 := h.expect(1, "welcome")
	w2 := h.expect(2, "welcome")
	assert.Equal(t, "welcome", w1.Fields[0].Value, "welcome first, type first")
	assert.Equal(t, "1", w1.Value("proto"))
	assert.Equal(t, "apollo11/1.2.3", w1.Value("server"))
	assert.Equal(t, "none", w1.Value("auth"))
	assert.Equal(t, "4096", w1.Value("max_frame"))
	hex32 := regexp.MustCompile(`^[0-9a-f]{32}$`)
	assert.Regexp(t, hex32, w1.Value("nonce"))
	assert.Regexp(t, hex32, w2.Value("nonce"))
	assert.NotEqual(t, w1.Value("nonce"), w2.Value("nonce"), "a new nonce on every connection")
	assert.Equal(t, 2, h.c.PeerCount())

	h = newHarness(t, func(c *Config) { c.Token = []byte("secret") })
	h.c.Open(1)
	w := h.expect(1, "welcome")
	assert.Equal(t, "hmac-sha256", w.Value("auth"))
	assert.Equal(t, "1048576", w.Value("max_frame"), "default max frame")
	assert.Equal(t, "apollo11/dev", w.Value("server"))
}

func TestCore_NotRegistered(t *testing.T) {
	for _, kv := range [][]string{
		{"submit", "req", "r1", "task_type", "x"},
		{"heartbeat", "seq", "1"},
		{"query", "req", "r2", "task_id", "1"},
		{"bogus", "req", "r3"},
		{"welcome"},
		{"state_get"},
	} {
		t.Run(kv[0], func(t *testing.T) {
			h := newHarness(t)
			p := h.open()
			h.send(p, kv[0], kv[1:]...)
			e := h.expectErr(p, wire.CodeNotRegistered)
			if len(kv) > 2 && kv[1] == "req" {
				assert.Equal(t, kv[2], e.Value("req"))
			}
			assert.True(t, h.fx.closed[p])
			assert.Zero(t, h.c.PeerCount())
			h.send(p, "hello", "req", "h") // gone: ignored
			h.none(p)
		})
	}
}

func TestCore_UnsupportedProto(t *testing.T) {
	for _, typ := range []string{"hello", "register"} {
		for _, proto := range []string{"2", "0", "", "01", "x"} {
			h := newHarness(t)
			p := h.open()
			h.send(p, typ, "req", "r", "proto", proto, "executor_id", "e1", "task_types", "x")
			e := h.expectErr(p, wire.CodeUnsupportedProto)
			if typ == "hello" {
				assert.Equal(t, "r", e.Value("req"))
			}
			assert.True(t, h.fx.closed[p], "%s proto=%q", typ, proto)
		}
		h := newHarness(t)
		p := h.open()
		h.send(p, typ, "req", "r", "proto", "1", "executor_id", "e1", "task_types", "x")
		assert.Len(t, h.drain(p), 1)
		assert.False(t, h.fx.closed[p])
	}
}

func TestCore_Auth(t *testing.T) {
	token := []byte("s3cret")
	nonce := "0123456789abcdef0123456789abcdef"
	good := auth.Sign(token, nonce)
	require.Len(t, good, 64)
	for _, typ := range []string{"hello", "register"} {
		reply := map[string]string{"hello": "hello_ok", "register": "registered"}[typ]
		kv := func(extra ...string) []string {
			return append([]string{"req", "r", "executor_id", "e1", "task_types", "x"}, extra...)
		}
		for name, extra := range map[string][]string{
			"missing":    nil,
			"wrong":      {"auth", auth.Sign([]byte("other"), nonce)},
			"upper case": {"auth", strings.ToUpper(good)},
			"truncated":  {"auth", good[:63]},
			"empty":      {"auth", ""},
			"token":      {"auth", string(token)},
		} {
			t.Run(typ+"/"+name, func(t *testing.T) {
				h := newHarness(t, func(c *Config) { c.Token = token })
				p := h.open()
				h.send(p, typ, kv(extra...)...)
				e := h.expectErr(p, wire.CodeAuthFailed)
				if typ == "hello" {
					assert.Equal(t, "r", e.Value("req"))
				}
				assert.True(t, h.fx.closed[p])
				assert.Empty(t, h.c.execs)
			})
		}
		t.Run(typ+"/right", func(t *testing.T) {
			h := newHarness(t, func(c *Config) { c.Token = token })
			p := h.open()
			h.send(p, typ, kv("auth", good)...)
			h.expect(p, reply)
			assert.False(t, h.fx.closed[p])
		})
		t.Run(typ+"/ignored without a token", func(t *testing.T) {
			h := newHarness(t)
			p := h.open()
			h.send(p, typ, kv("auth", "whatever")...)
			h.expect(p, reply)
		})
	}
	// The nonce is the one sent on this connection.
	h := newHarness(t, func(c *Config) { c.Token = token; c.Nonce = nil })
	h.c.Open(1)
	h.c.Open(2)
	n1 := h.expect(1, "welcome").Value("nonce")
	h.expect(2, "welcome")
	h.send(2, "hello", "auth", auth.Sign(token, n1))
	h.expectErr(2, wire.CodeAuthFailed)
	h.send(1, "hello", "auth", auth.Sign(token, n1))
	h.expect(1, "hello_ok")
}

// A register or hello is checked in this order: proto, auth, values.
func TestCore_HandshakeCheckOrder(t *testing.T) {
	token := []byte("tok")
	h := newHarness(t, func(c *Config) { c.Token = token })
	p := h.open()
	h.send(p, "register", "proto", "2", "auth", "bad", "slots", "0")
	h.expectErr(p, wire.CodeUnsupportedProto)
	p = h.open()
	h.send(p, "register", "auth", "bad", "slots", "0")
	h.expectErr(p, wire.CodeAuthFailed)
	p = h.open()
	h.send(p, "register", "auth", auth.Sign(token, "0123456789abcdef0123456789abcdef"), "slots", "0", "executor_id", "e", "task_types", "x")
	h.expectErr(p, wire.CodeBadRequest)
	assert.False(t, h.fx.closed[p])
	// An over-long req is never echoed, whatever the error.
	long := strings.Repeat("r", 65)
	p = h.open()
	h.send(p, "hello", "req", long, "auth", "bad")
	assert.False(t, h.expectErr(p, wire.CodeAuthFailed).Has("req"))
	p = h.open()
	h.send(p, "hello", "req", long, "proto", "2")
	assert.False(t, h.expectErr(p, wire.CodeUnsupportedProto).Has("req"))
	p = h.open()
	h.send(p, "query", "req", long)
	assert.False(t, h.expectErr(p, wire.CodeNotRegistered).Has("req"))
}

func TestCore_HandshakeTimeout(t *testing.T) {
	h := newHarness(t)
	slow := h.open()
	cl := h.client()
	ex := h.executor("e1", "x", 1)
	h.advance(DefaultHandshakeTimeout - time.Millisecond)
	assert.False(t, h.fx.closed[slow])
	// A refused register does not complete the handshake.
	h.send(slow, "register", "executor_id", "e2", "task_types", "x", "slots", "0")
	h.expectErr(slow, wire.CodeBadRequest)
	h.advance(time.Millisecond)
	assert.True(t, h.fx.closed[slow])
	h.none(slow) // closed without an error frame
	assert.False(t, h.fx.closed[cl])
	assert.False(t, h.fx.closed[ex])
	// Idle clients are kept.
	h.advance(48 * time.Hour)
	assert.False(t, h.fx.closed[cl])
	h.send(cl, "stats", "req", "s")
	h.expect(cl, "stats")

	// Configurable; a peer gone before the timeout is no trouble.
	h = newHarness(t, func(c *Config) { c.HandshakeTimeout = time.Second })
	a := h.open()
	b := h.open()
	h.c.Closed(a)
	h.advance(time.Second)
	assert.True(t, h.fx.closed[b])
	assert.False(t, h.fx.closed[a])
	assert.Zero(t, h.c.PeerCount())
}

// unreadRecorder is the harness's recorder whose peers in unread have
// input the server has not read (Unread).
type unreadRecorder struct {
	*recorder
	unread map[PeerID]bool
	asked  map[PeerID]int
}

func (u unreadRecorder) Unread(p PeerID) bool { u.asked[p]++; return u.unread[p] }

// A connection whose input waits unread at its handshake deadline is
// looked at again a grace later, as long as it waits: the server was
// late, not the peer. Deadlines behind it keep their time.
func TestCore_HandshakeTimeoutSparesUnreadInput(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.HandshakeTimeout = time.Second })
	fx := unreadRecorder{recorder: h.fx, unread: map[PeerID]bool{}, asked: map[PeerID]int{}}
	h.c.fx = fx
	unread, silent := h.open(), h.open()
	fx.unread[unread] = true
	h.advance(handshakeGrace / 2)
	after := h.open() // its deadline falls inside unread's grace
	h.advance(time.Second - handshakeGrace/2)
	assert.True(t, h.fx.closed[silent], "no input: closed at its deadline")
	assert.False(t, h.fx.closed[unread], "its input waits unread")
	h.advance(handshakeGrace / 2)
	assert.True(t, h.fx.closed[after], "on time, behind a grace")
	for range 3 { // the server still has not read it
		h.advance(handshakeGrace)
		assert.False(t, h.fx.closed[unread])
	}
	asked := fx.asked[unread]
	fx.unread[unread] = false // read: it is the peer's move now
	h.advance(handshakeGrace)
	assert.True(t, h.fx.closed[unread])
	assert.Equal(t, asked+1, fx.asked[unread])
	h.none(unread) // closed without an error frame

	// Its hello read in the grace, it stays.
	greeted := h.open()
	fx.unread[greeted] = true
	h.advance(time.Second)
	h.send(greeted, "hello", "req", "h")
	h.expect(greeted, "hello_ok")
	h.advance(time.Hour)
	assert.False(t, h.fx.closed[greeted])
	assert.Equal(t, 1, fx.asked[greeted])
}

// A server that keeps reporting input unread is given graces for one
// more handshake timeout at most: a peer is not kept for ever on a
// report that never changes.
func TestCore_HandshakeGracesEnd(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.HandshakeTimeout = time.Second })
	fx := unreadRecorder{recorder: h.fx, unread: map[PeerID]bool{}, asked: map[PeerID]int{}}
	h.c.fx = fx
	p := h.open()
	fx.unread[p] = true
	h.advance(time.Second)
	assert.False(t, h.fx.closed[p], "a grace at its deadline")
	h.advance(time.Second - handshakeGrace)
	assert.False(t, h.fx.closed[p], "graces within a second timeout")
	h.advance(2 * handshakeGrace)
	assert.True(t, h.fx.closed[p], "closed a timeout past its deadline")
	h.none(p)
}

func TestCore_NotPermitted(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	ex := h.executor("e1", "x", 1)
	for _, typ := range []string{"heartbeat", "started", "progress", "result", "bye", "register", "hello",
		"task", "welcome", "pong", "result_ack", "done", "error", "registered"} {
		h.send(cl, typ, "req", "r", "seq", "1")
		e := h.expectErr(cl, wire.CodeNotPermitted)
		assert.Equal(t, "r", e.Value("req"), typ)
	}
	for _, typ := range []string{"submit", "query", "cancel", "list", "stats", "debug", "hello", "register",
		"task", "cancelled", "tasks"} {
		h.send(ex, typ, "executor_id", "e1", "task_types", "x", "task_type", "x")
		h.expectErr(ex, wire.CodeNotPermitted)
	}
	assert.False(t, h.fx.closed[cl])
	assert.False(t, h.fx.closed[ex])
	assert.Len(t, h.fx.records, 1, "nothing but the registration was recorded")
	assert.Len(t, h.c.execs, 1)
	// Both still work.
	h.send(cl, "stats", "req", "s")
	h.expect(cl, "stats")
	h.heartbeat(ex, "")
}

func TestCore_UnknownType(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	ex := h.executor("e1", "x", 1)
	h.send(cl, "frobnicate", "req", "u")
	e := h.expectErr(cl, wire.CodeUnknownType)
	assert.Equal(t, "u", e.Value("req"))
	h.send(ex, "frobnicate")
	h.expectErr(ex, wire.CodeUnknownType)
	h.send(cl, "frobnicate", "req", strings.Repeat("x", 65))
	assert.False(t, h.expectErr(cl, wire.CodeUnknownType).Has("req"))
	assert.False(t, h.fx.closed[cl])
	assert.False(t, h.fx.closed[ex])
}

func TestCore_Req(t *testing.T) {
	h := newHarness(t)
	p := h.open()
	long := strings.Repeat("r", 65)
	h.send(p, "hello", "req", long)
	e := h.expectErr(p, wire.CodeBadRequest)
	assert.False(t, e.Has("req"), "answered without a req")
	assert.False(t, h.fx.closed[p], "the hello may be sent again")
	max := strings.Repeat("\n", 64) // 64 bytes after unescaping
	h.send(p, "hello", "req", max)
	assert.Equal(t, max, h.expect(p, "hello_ok").Value("req"))

	ex := h.executor("e1", "x", 1)
	id := h.submit(p, "task_type", "x")
	h.task(ex)
	// Every reply carries the request's req, or none without one.
	requests := [][]string{
		{"submit", "task_type", "x"},
		{"query", "task_id", itoa(id)},
		{"query", "task_id", "99"},
		{"cancel", "task_id", "99"},
		{"list", "state", "pending"},
		{"list", "state", "bogus"},
		{"stats"},
		{"state_get"},
		{"debug", "on", "false"},
		{"debug", "on", "maybe"},
		{"cancel", "task_id", itoa(id)},
		{"cancel", "task_id", itoa(id)},
	}
	// A req may be empty: the reply then carries req= (the same req).
	for _, mode := range []string{"req", "no req", "empty req"} {
		for _, r := range requests {
			kv := r[1:]
			switch mode {
			case "req":
				kv = append([]string{"req", "R-" + r[0]}, kv...)
			case "empty req":
				kv = append([]string{"req", ""}, kv...)
			}
			h.send(p, r[0], kv...)
			m := h.drain(p)
			require.Len(t, m, 1, "%v", r)
			switch mode {
			case "req":
				assert.Equal(t, "R-"+r[0], m[0].Value("req"), "%v: %s", r, m[0])
			case "no req":
				assert.False(t, m[0].Has("req"), "%v: %s", r, m[0])
			default:
				req, ok := m[0].Get("req")
				assert.True(t, ok && req == "", "%v: %s", r, m[0])
			}
			if r[0] == "cancel" && m[0].Type() == "cancelled" {
				h.expect(ex, "cancel")
			}
		}
		h.submit(p, "task_type", "x")
		h.drain(ex)
	}
	for _, typ := range []string{"submit", "query", "cancel", "list", "stats", "state_get", "debug"} {
		h.send(p, typ, "req", long, "task_type", "x", "task_id", "1", "state", "pending", "on", "true")
		e := h.expectErr(p, wire.CodeBadRequest)
		assert.False(t, e.Has("req"), typ)
		assert.Contains(t, e.Value("message"), "req")
	}
	assert.False(t, h.fx.closed[p])
	assert.False(t, h.c.Debug())
	// An executor's state_get with a long req too.
	h.send(ex, "state_get", "req", long)
	assert.False(t, h.expectErr(ex, wire.CodeBadRequest).Has("req"))

	// An empty req on hello, on an unknown type, and on a submit's done.
	emptyReq := func(m *wire.Message) {
		t.Helper()
		req, ok := m.Get("req")
		assert.True(t, ok && req == "", "%s", m)
	}
	p2 := h.open()
	h.send(p2, "hello", "req", "")
	emptyReq(h.expect(p2, "hello_ok"))
	h.send(p2, "frobnicate", "req", "")
	emptyReq(h.expectErr(p2, wire.CodeUnknownType))
	ey := h.executor("e2", "y", 1)
	h.send(p2, "submit", "req", "", "task_type", "y", "wait", "true")
	emptyReq(h.expect(p2, "submitted"))
	id, ver := h.task(ey)
	h.start(ey, id, ver)
	h.accepted(ey, id, ver, "succeeded")
	emptyReq(h.expect(p2, "done"))
}

func TestCore_Debug(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	h.send(cl, "debug", "req", "d", "on", "true")
	assert.Equal(t, "d", h.expect(cl, "debug_ok").Value("req"))
	assert.True(t, h.c.Debug())
	h.send(cl, "debug", "req", "d", "on", "false")
	h.expect(cl, "debug_ok")
	assert.False(t, h.c.Debug())
	h.send(cl, "debug", "req", "d")
	h.expectErr(cl, wire.CodeBadRequest)
}

func TestCore_Unavailable(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	ex := h.executor("e1", "x", 1)
	a := h.submit(cl, "task_type", "x")
	h.task(ex)
	h.c.SetAvailable(false)
	assert.False(t, h.c.Available())
	h.send(cl, "submit", "req", "s", "task_type", "x")
	h.expectErr(cl, wire.CodeUnavailable)
	h.send(cl, "cancel", "req", "c", "task_id", itoa(a))
	h.expectErr(cl, wire.CodeUnavailable)
	h.send(cl, "query", "req", "q", "task_id", itoa(a))
	h.expect(cl, "task_state") // reads are served
	assert.False(t, h.fx.closed[cl])
	h.c.SetAvailable(true)
	b := h.submit(cl, "task_type", "x")
	h.start(ex, a, 1)
	h.accepted(ex, a, 1, "succeeded")
	id, _ := h.task(ex)
	assert.Equal(t, b, id)
}

// TestCore_ClosedPeerIgnored checks that a message handed over for a
// connection already closed changes nothing, even from the peer the core
// saw last.
func TestCore_ClosedPeerIgnored(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	h.send(cl, "stats", "req", "s")
	h.expect(cl, "stats")
	h.c.Closed(cl)
	h.send(cl, "submit", "req", "r", "task_type", "x")
	h.send(cl, "stats", "req", "s2")
	h.none(cl)
	assert.Zero(t, h.c.nonTerminal(), "nothing was submitted")
	assert.Zero(t, h.c.PeerCount())
}

// An error frame from a peer (an executor that cannot decode one of our
// frames says so before it closes) is not a request: not_permitted, as for
// any other known type it may not send, and a warning naming the peer.
func TestCore_ErrorFromPeer(t *testing.T) {
	var buf syncbuf.Buffer
	h := newHarness(t, withLog(&buf))
	ex := h.executor("e1", "x", 1)
	h.send(ex, "error", "code", "malformed", "message", "malformed payload at byte 0: no type")
	h.expectErr(ex, wire.CodeNotPermitted)
	assert.False(t, h.fx.closed[ex])
	log := buf.String()
	assert.Contains(t, log, `msg="error from peer"`)
	assert.Contains(t, log, "executor=e1 code=malformed")
}
