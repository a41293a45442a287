package bench

import "testing"

// What each expectation accepts, "any" above all: the damaged-frame cases
// pass a peer that answers or closes, and fail one that hangs with the
// connection open, answers garbage or breaks the handshake.
func TestMatches(t *testing.T) {
	tests := []struct {
		expect, outcome string
		want            bool
	}{
		{"stats", "stats", true},
		{"stats", "stats+close", false},
		{"stats", "stats+wrong-req", false},
		{"task_state|error:unknown_task", "error:unknown_task", true},
		{"task_state|error:unknown_task", "error:bad_request", false},
		{"error:malformed+close", "error:malformed+close", true},
		{"error:malformed+close", "error:malformed", false},
		{"timeout", "timeout", true},

		// any: an answer, with or without a close, or a bare close.
		{"any", "error:malformed+close", true},
		{"any", "error:frame_too_large+close", true},
		{"any", "error:bad_request", true},
		{"any", "error:unknown_type+close", true},
		{"any", "submitted", true},
		{"any", "close", true},
		// any: not a hang, nor a fault of the peer.
		{"any", "timeout", false},
		{"any", "error:malformed", false},       // malformed must close (spec section 2)
		{"any", "error:frame_too_large", false}, // as must frame_too_large (section 1)
		{"any", "error:", false},                // an error frame without a code
		{"any", "error", false},                 // a read that failed, not a frame
		{"any", "stats+missing-replies", false},
		{"any", "stats+malformed-answer", false},
		{"any", "malformed-answer", false},
		{"any", "submitted+wrong-req", false},
		{"any", "error:bad_request+close+wrong-req", false},
		{"any", "no welcome", false},
		{"any", "bad welcome: proto is not 1", false},
		{"any", "hello: close", false},
		{"any", "hello: timeout", false},
		{"any", "hello refused: error:auth_failed", false},
		{"any", "hello failed: broken pipe", false},
		{"any", "write failed: connection reset by peer", false},
		{"any", "", false},
		{"error:bad_request|any", "timeout", false},
		{"error:bad_request|any", "close", true},
	}
	for _, tc := range tests {
		if got := matches(tc.expect, tc.outcome); got != tc.want {
			t.Errorf("matches(%q, %q) = %v, want %v", tc.expect, tc.outcome, got, tc.want)
		}
	}
}
