package builtin

import (
	"github.com/apollo11/apollo11/executor"
	"github.com/apollo11/apollo11/wire"
)

// frameReserve is what the main control's size check of a result counts
// besides its out.* keys and its error. See docs/protocol.md, "Output size
// check". It is a task_state reply with a req of 128 bytes, every number
// of 20 digits and the longest state name. That is about 380 bytes,
// rounded up, plus the longest executor id. The task type and trace id
// are counted apart.
const frameReserve = 512 + executor.MaxIDLen

// outputRoom is how many bytes, once escaped, stdout and stderr together
// may take so that the result passes the main control's size check, given
// the other outputs and the error it goes with. The lines that carry the
// two streams and both truncation flags are counted as taken.
func outputRoom(t *executor.Task, out map[string]string, err error) int {
	room := t.MaxFrame() - frameReserve - wire.EscapedLen(t.Type) - wire.EscapedLen(t.TraceID) -
		2*len("\nout.stdout=") - 2*len("\nout.stdout_truncated=true")
	if err != nil {
		room -= len("\nerror=") + wire.EscapedLen(err.Error())
	}
	for k, v := range out {
		room -= len("\nout.") + len(k) + len("=") + wire.EscapedLen(v)
	}
	return max(room, 0)
}

// fitStreams cuts stdout and stderr, on rune boundaries, so that escaped
// they take at most room bytes together, and reports which it cut. When
// both do not fit, each gets half the room, and a stream that needs less
// leaves the rest to the other.
func fitStreams(stdout, stderr string, room int) (string, string, bool, bool) {
	a, b := wire.EscapedLen(stdout), wire.EscapedLen(stderr)
	if a+b <= room {
		return stdout, stderr, false, false
	}
	forA := room / 2
	switch {
	case a <= forA:
		forA = a
	case b <= room-forA:
		forA = room - b
	}
	outCut, errCut := wire.CutEscaped(stdout, forA), wire.CutEscaped(stderr, room-forA)
	return outCut, errCut, len(outCut) < len(stdout), len(errCut) < len(stderr)
}
