package core

import (
	"fmt"

	"github.com/apollo11/apollo11/wire"
)

// ErrFrameTooSmall is returned by CheckFrames: a stored task needs larger
// frames than the configured MaxFrame allows.
var ErrFrameTooSmall = fmt.Errorf("max frame too small for the stored tasks")

// CheckFrames reports a known task whose frames (its task frame, while it
// may still be dispatched, and its task_state or done reply) could exceed
// MaxFrame. A main control restarted with a smaller --max-frame than its
// tasks were accepted under would otherwise send frames larger than the
// max_frame it announces (spec section 1), which its peers must refuse:
// an executor would drop its connection at every dispatch of such a task,
// for ever. Called once after recovery; it scans every task.
func (c *Core) CheckFrames() error {
	var worst *task
	need := 0
	c.tasks.scan(0, 0, func(t *task) bool {
		n := taskStateBase(t, outputsStateLen(t.state == Failed)) + linesSize(t.outs)
		if e := t.errText(); e != "" {
			n += len("\nerror=") + wire.EscapedLen(e)
		}
		if !t.state.Terminal() {
			n = max(n, taskFrameMax(t.typ.name, traceLen(t.ownTrace()), lines{size: linesSize(t.args)}))
		}
		if n > need {
			need, worst = n, t
		}
		return true
	})
	if need <= c.cfg.MaxFrame {
		return nil
	}
	return fmt.Errorf("%w: task %d (%s) needs frames of up to %d bytes, more than --max-frame %d: start with --max-frame %d or more",
		ErrFrameTooSmall, worst.id, worst.state, need, c.cfg.MaxFrame, need)
}

// linesSize is lines.size for pre-encoded lines joined by LF: their bytes
// and the LF before the first.
func linesSize(s string) int {
	if s == "" {
		return 0
	}
	return len(s) + 1
}
