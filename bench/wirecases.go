package bench

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"

	"github.com/apollo11/apollo11/wire"
)

// wireCase is one kind of probe of `apollo11-bench wire`.
// It holds the bytes it sends after the welcome, and after a hello when hello is set.
// It also holds the answer wire-v1 requires of a main control.
type wireCase struct {
	name  string
	hello bool
	build func(r *rand.Rand, req string) []byte
	// expect lists the acceptable outcomes, separated by |.
	// An outcome is the reply's type, with ":code" for errors.
	// "+close" follows when the peer closed after it.
	// "close" alone is a close without a reply.
	// "timeout" is no answer within the timeout.
	// "any" is for damage whose right answer the harness does not work out.
	// It accepts one well-formed answer, with or without a close, or a bare close.
	// It accepts nothing that shows a fault (see anyAnswer).
	// Such faults are a hang with the connection open, garbage, or a foreign req.
	// So are malformed or frame_too_large left open, and a failed handshake.
	expect  string
	replies int // frames expected (pipelined cases); 0 means 1
	// buildOver, when set, replaces build for a case whose bytes depend
	// on the max_frame the peer announced.
	// It returns nil when no such probe can be made.
	// The case is then left out of the run.
	buildOver func(r *rand.Rand, maxFrame uint64) []byte
}

// probeBytes builds probe bytes of c for a peer whose max_frame is maxFrame.
func (c *wireCase) probeBytes(r *rand.Rand, req string, maxFrame uint64) []byte {
	if c.buildOver != nil {
		return c.buildOver(r, maxFrame)
	}
	return c.build(r, req)
}

// expectFor is what the peer must answer to payload, a probe of c.
// That is the case's expectation, unless the first frame announces more
// than the peer's max_frame.
// Spec section 1 answers that with frame_too_large and a close, whatever the payload.
// The "1025 keys" probe, some 7 KB, exceeds a --max-frame of a few KB.
func (c *wireCase) expectFor(payload []byte, maxFrame uint64) string {
	if len(payload) >= wire.HeaderLen && uint64(binary.BigEndian.Uint32(payload)) > maxFrame {
		return "error:frame_too_large+close"
	}
	return c.expect
}

// oversizeHeader is a header announcing more than maxFrame.
// It is nil when maxFrame is the most a header can announce.
// Half the probes announce a little more than maxFrame.
// They catch an off-by-one in the peer's check.
// Half announce anything up to the uint32 maximum.
// They catch a peer that allocates what it is told.
func oversizeHeader(r *rand.Rand, maxFrame uint64) []byte {
	if maxFrame >= math.MaxUint32 {
		return nil
	}
	room := math.MaxUint32 - maxFrame // >= 1
	n := maxFrame + 1
	if r.IntN(2) == 0 {
		n += r.Uint64N(min(room, 1000))
	} else {
		n += r.Uint64N(room)
	}
	return binary.BigEndian.AppendUint32(nil, uint32(n))
}

// frame encodes a message given as alternating keys and values, type first.
// It does no checks, because the point is to send what the caller says.
func frame(kv ...string) []byte {
	var p []byte
	for i := 0; i+1 < len(kv); i += 2 {
		if i > 0 {
			p = append(p, '\n')
		}
		p = append(p, kv[i]...)
		p = append(p, '=')
		p = append(p, kv[i+1]...)
	}
	return rawFrame(p)
}

// rawFrame puts a length header in front of a payload.
func rawFrame(p []byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(len(p)))
	return append(b, p...)
}

// randValue is a short value that needs escaping now and then.
func randValue(r *rand.Rand) string {
	const chars = "abcxyz0129 _-.,é"
	var b strings.Builder
	for range 1 + r.IntN(12) {
		b.WriteString(string([]rune(chars)[r.IntN(len([]rune(chars)))]))
	}
	switch r.IntN(6) {
	case 0:
		b.WriteString(`\e`) // an escaped '='
	case 1:
		b.WriteString(`\n\\`)
	}
	return b.String()
}

// validSubmit is a well-formed submit of a task type nobody serves.
func validSubmit(r *rand.Rand, req string) []byte {
	kv := []string{"type", "submit", "req", req, "task_type", "bench-wire-probe", "priority", fmt.Sprint(r.IntN(10))}
	for i := range r.IntN(4) {
		kv = append(kv, fmt.Sprintf("arg.k%d", i), randValue(r))
	}
	return frame(kv...)
}

// mutate flips one random bit of the payload of f (never the header).
func flipPayloadBit(r *rand.Rand, f []byte) []byte {
	i := wire.HeaderLen + r.IntN(len(f)-wire.HeaderLen)
	f[i] ^= 1 << r.IntN(8)
	return f
}

var wireCases = []wireCase{
	// Valid requests.
	{name: "valid stats", hello: true, expect: "stats",
		build: func(_ *rand.Rand, req string) []byte { return frame("type", "stats", "req", req) }},
	{name: "valid submit", hello: true, expect: "submitted", build: validSubmit},
	{name: "valid query", hello: true, expect: "task_state|error:unknown_task",
		build: func(r *rand.Rand, req string) []byte {
			return frame("type", "query", "req", req, "task_id", fmt.Sprint(1+r.IntN(1000)))
		}},
	{name: "valid state_get", hello: true, expect: "state",
		build: func(_ *rand.Rand, req string) []byte { return frame("type", "state_get", "req", req) }},
	{name: "valid list", hello: true, expect: "tasks",
		build: func(r *rand.Rand, req string) []byte {
			return frame("type", "list", "req", req, "state", "pending", "limit", fmt.Sprint(1+r.IntN(1000)))
		}},
	{name: "valid pipelined x20", hello: true, expect: "stats", replies: 20,
		build: func(_ *rand.Rand, req string) []byte {
			var b []byte
			for i := range 20 {
				b = append(b, frame("type", "stats", "req", fmt.Sprintf("%s-%d", req, i))...)
			}
			return b
		}},
	{name: "valid trailing LF", hello: true, expect: "stats",
		build: func(_ *rand.Rand, req string) []byte { return rawFrame([]byte("type=stats\nreq=" + req + "\n")) }},
	{name: "valid unknown key", hello: true, expect: "stats",
		build: func(_ *rand.Rand, req string) []byte { return frame("type", "stats", "req", req, "x-future", "1") }},

	// Well-formed but wrong. An error comes, and the connection stays open.
	{name: "unknown type", hello: true, expect: "error:unknown_type",
		build: func(_ *rand.Rand, req string) []byte { return frame("type", "frobnicate", "req", req) }},
	{name: "bad value priority=10", hello: true, expect: "error:bad_request",
		build: func(_ *rand.Rand, req string) []byte {
			return frame("type", "submit", "req", req, "task_type", "t", "priority", "10")
		}},
	{name: "missing task_type", hello: true, expect: "error:bad_request",
		build: func(_ *rand.Rand, req string) []byte { return frame("type", "submit", "req", req) }},
	{name: "number with sign", hello: true, expect: "error:bad_request",
		build: func(_ *rand.Rand, req string) []byte { return frame("type", "query", "req", req, "task_id", "+5") }},
	{name: "req over 64 bytes", hello: true, expect: "error:bad_request",
		build: func(_ *rand.Rand, _ string) []byte { return frame("type", "stats", "req", strings.Repeat("r", 65)) }},
	{name: "client sends heartbeat", hello: true, expect: "error:not_permitted",
		build: func(_ *rand.Rand, req string) []byte { return frame("type", "heartbeat", "req", req, "seq", "1") }},
	{name: "second hello", hello: true, expect: "error:not_permitted",
		build: func(_ *rand.Rand, req string) []byte { return frame("type", "hello", "req", req) }},

	// Before the handshake.
	{name: "submit before hello", expect: "error:not_registered+close",
		build: func(r *rand.Rand, req string) []byte { return validSubmit(r, req) }},
	{name: "hello proto=2", expect: "error:unsupported_proto+close",
		build: func(_ *rand.Rand, req string) []byte { return frame("type", "hello", "req", req, "proto", "2") }},
	{name: "hello proto=abc", expect: "error:bad_request|error:unsupported_proto+close",
		build: func(_ *rand.Rand, req string) []byte { return frame("type", "hello", "req", req, "proto", "abc") }},

	// Malformed. An error comes, then the connection closes.
	{name: "duplicate key", hello: true, expect: "error:malformed+close",
		build: func(_ *rand.Rand, req string) []byte { return frame("type", "stats", "req", req, "req", req) }},
	{name: "bad escape", hello: true, expect: "error:malformed+close",
		build: func(_ *rand.Rand, req string) []byte { return frame("type", "stats", "req", req, "x", `a\qb`) }},
	{name: "lone backslash", hello: true, expect: "error:malformed+close",
		build: func(_ *rand.Rand, req string) []byte { return frame("type", "stats", "req", req, "x", `ab\`) }},
	{name: "raw = in value", hello: true, expect: "error:malformed+close",
		build: func(_ *rand.Rand, req string) []byte { return frame("type", "stats", "req", req, "x", "a=b") }},
	{name: "upper-case key", hello: true, expect: "error:malformed+close",
		build: func(_ *rand.Rand, req string) []byte { return frame("type", "stats", "req", req, "Key", "v") }},
	{name: "key of 65 bytes", hello: true, expect: "error:malformed+close",
		build: func(_ *rand.Rand, req string) []byte {
			return frame("type", "stats", "req", req, strings.Repeat("k", 65), "v")
		}},
	{name: "bare prefix key", hello: true, expect: "error:malformed+close",
		build: func(_ *rand.Rand, req string) []byte { return frame("type", "stats", "req", req, "arg.", "v") }},
	{name: "empty line", hello: true, expect: "error:malformed+close",
		build: func(_ *rand.Rand, req string) []byte { return rawFrame([]byte("type=stats\n\nreq=" + req)) }},
	{name: "line without =", hello: true, expect: "error:malformed+close",
		build: func(_ *rand.Rand, req string) []byte {
			return rawFrame([]byte("type=stats\nreq=" + req + "\nnoequals"))
		}},
	{name: "missing type", hello: true, expect: "error:malformed+close",
		build: func(_ *rand.Rand, req string) []byte { return frame("req", req, "x", "1") }},
	{name: "invalid UTF-8", hello: true, expect: "error:malformed+close",
		build: func(_ *rand.Rand, req string) []byte { return frame("type", "stats", "req", req, "x", "\xff\xfe") }},
	{name: "zero-length frame", hello: true, expect: "error:malformed+close",
		build: func(_ *rand.Rand, _ string) []byte { return []byte{0, 0, 0, 0} }},
	{name: "1025 keys", hello: true, expect: "error:malformed+close",
		build: func(_ *rand.Rand, req string) []byte {
			kv := []string{"type", "stats", "req", req}
			for i := range 1023 {
				kv = append(kv, fmt.Sprintf("k%d", i), "v")
			}
			return frame(kv...)
		}},
	{name: "oversize header", hello: true, expect: "error:frame_too_large+close", buildOver: oversizeHeader},
	{name: "malformed before hello", expect: "error:malformed+close",
		build: func(_ *rand.Rand, _ string) []byte { return rawFrame([]byte("type=hello\nreq=a\nreq=b")) }},

	// Incomplete. The peer must keep waiting for the rest.
	{name: "truncated frame", hello: true, expect: "timeout",
		build: func(r *rand.Rand, req string) []byte {
			f := frame("type", "stats", "req", req, "pad", strings.Repeat("p", 20))
			return f[:len(f)-1-r.IntN(20)]
		}},

	// Random damage. An answer or a close comes, never a hang (see anyAnswer).
	{name: "bit flip in payload", hello: true, expect: "any",
		build: func(r *rand.Rand, req string) []byte { return flipPayloadBit(r, validSubmit(r, req)) }},
	{name: "random bytes", hello: true, expect: "any",
		build: func(r *rand.Rand, _ string) []byte {
			b := make([]byte, 4+r.IntN(64))
			for i := range b {
				b[i] = byte(r.Uint32())
			}
			binary.BigEndian.PutUint32(b, uint32(len(b)-4))
			return b
		}},
}
