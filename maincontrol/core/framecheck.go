package core

import (
	"fmt"

	"github.com/apollo11/apollo11/wire"
)

// CheckFrames returns ErrFrameTooSmall when a stored task needs larger
// frames than the configured MaxFrame allows.
var ErrFrameTooSmall = fmt.Errorf("max frame too small for the stored tasks")

// CheckFrames reports a known task whose frames could exceed MaxFrame.
// Those are its task frame, while it may still be dispatched, and its
// task_state or done reply. Restarted with a smaller --max-frame, a main
// control would otherwise send frames over its max_frame (spec section 1).
// Its peers must refuse those. An executor would then drop its connection
// at every dispatch of such a task, for ever. It runs once after recovery
// and scans every task.
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

// linesSize is lines.size for pre-encoded lines joined by LF. It counts
// their bytes and the LF before the first.
func linesSize(s string) int {
	if s == "" {
		return 0
	}
	return len(s) + 1
}
