// wireoutcome.go: how a probe's answer or read error is named and matched.

package bench

import (
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/apollo11/apollo11/wire"
)

// answerName is an answer as outcomes name it.
// That is its type, and for an error its code ("error:bad_request").
func answerName(m *wire.Message) string {
	if m.Kind() == wire.KindError {
		return "error:" + m.Value("code")
	}
	return m.Type()
}

// welcomeProblem names what in a welcome breaks spec section 3, or "" when nothing does.
// The section asks for proto=1 and a nonce of 32 lower-case hex characters.
// It also asks for auth none or hmac-sha256, and a max_frame.
func welcomeProblem(m *wire.Message) string {
	if m.Value("proto") != "1" {
		return "proto is not 1"
	}
	if n := m.Value("nonce"); len(n) != 32 || strings.Trim(n, "0123456789abcdef") != "" {
		return "nonce is not 32 lower-case hex characters"
	}
	if a := m.Value("auth"); a != "none" && a != "hmac-sha256" {
		return "auth is not none or hmac-sha256"
	}
	if _, err := wire.ParseWelcome(m); err != nil || !m.Has("max_frame") {
		return "no valid max_frame"
	}
	return ""
}

// sentReqs returns the req of every whole frame in payload that a reply must echo.
// Such a req is present and valid (at most 64 bytes).
// Damaged bytes yield none.
func sentReqs(payload []byte) map[string]bool {
	reqs := map[string]bool{}
	var d wire.Decoder
	for len(payload) > 0 {
		m, n, err := d.Decode(payload)
		if err != nil || m == nil {
			break
		}
		if r, ok := m.Get("req"); ok && len(r) <= 64 {
			reqs[r] = true
		}
		payload = payload[n:]
	}
	return reqs
}

// reqAnswered says whether m carries one of the reqs sent.
// Spec section 3 says every reply carries its request's req.
// Errors about the framing itself may lack it, since the request was never read.
func reqAnswered(m *wire.Message, reqs map[string]bool) bool {
	if len(reqs) == 0 {
		return true
	}
	if m.Kind() == wire.KindError {
		switch wire.Code(m.Value("code")) {
		case wire.CodeMalformed, wire.CodeFrameTooLarge:
			return true
		}
	}
	r, ok := m.Get("req")
	return ok && reqs[r]
}

// readOutcome names how a read ended when no (further) frame came.
func readOutcome(sofar string, err error) string {
	var what string
	switch {
	case isTimeout(err):
		what = "timeout"
	case errors.Is(err, io.EOF), errors.Is(err, syscall.ECONNRESET), errors.Is(err, net.ErrClosed):
		what = "close"
	case errors.Is(err, wire.ErrMalformed), errors.Is(err, wire.ErrFrameTooLarge):
		what = "malformed-answer"
	default:
		what = errClass(err)
	}
	if sofar == "" {
		return what
	}
	if what == "timeout" {
		return sofar + "+missing-replies"
	}
	return sofar + "+" + what
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func errClass(err error) string {
	var se syscall.Errno
	if errors.As(err, &se) {
		return se.Error()
	}
	return "error"
}

// matches reports whether outcome is one of expect's alternatives.
func matches(expect, outcome string) bool {
	for alt := range strings.SplitSeq(expect, "|") {
		if alt == outcome || alt == "any" && anyAnswer(outcome) {
			return true
		}
	}
	return false
}

// anyAnswer says whether outcome is one the "any" cases accept.
// In those cases damaged bytes were sent after a good handshake.
// The peer may answer with one well-formed frame carrying no req but the probe's.
// That frame is an error, or the reply when the damage left a valid request.
// The peer may also close the connection, with or without such an answer first.
// It does not accept anything that shows a fault of the peer.
//   - No answer and the connection left open ("timeout"). That is the hang the cases exist to find.
//   - An answer that does not decode.
//   - A reply with a foreign req.
//   - An error malformed or frame_too_large left open. Spec sections 1 and 2 require closing.
//   - A handshake or welcome that failed before the damaged bytes went out.
func anyAnswer(outcome string) bool {
	if outcome == "close" {
		return true
	}
	name, closed := strings.CutSuffix(outcome, "+close")
	if name == "" || strings.ContainsAny(name, " +") {
		// "timeout", "no welcome", "hello: close", "bad welcome: ...",
		// "write failed: ...", "x+missing-replies", "x+wrong-req",
		// "x+malformed-answer" carry a space or a second +.
		return false
	}
	switch name {
	case "timeout", "malformed-answer", "error", "error:":
		// "error" alone is a read that failed otherwise (errClass).
		// It is not an error frame, which always has a code.
		return false
	case "error:malformed", "error:frame_too_large":
		return closed
	}
	return true
}
