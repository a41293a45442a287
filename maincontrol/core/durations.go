package core

import (
	"math"
	"strings"
	"unicode/utf8"

	"github.com/apollo11/apollo11/wire"
)

// maxProgressNote bounds the progress note kept per task. Every running
// task may hold one, in memory.
const maxProgressNote = 256

// taskProgress is the latest progress of a task's current dispatch.
type taskProgress struct {
	percent uint8
	note    string
}

// startTooLate is task.startOff for a start too long after creation to
// fit. The task then shows no durations.
const startTooLate = math.MaxUint32

// startOffset is task.startOff for a start at ms. It is the time after
// creation plus 1, or startTooLate.
func startOffset(createdMs, ms int64) uint32 {
	d := max(0, ms-createdMs)
	if d >= startTooLate-1 {
		return startTooLate
	}
	return uint32(d) + 1
}

// clipNote cuts a note to maxProgressNote bytes on a rune boundary, ending
// in "..." when it was cut.
func clipNote(s string) string {
	if len(s) <= maxProgressNote {
		return s
	}
	n := maxProgressNote - len("...")
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "..."
}

// keepProgress records a progress of t's current dispatch. The note is
// copied, as the message borrows the connection's read buffer.
func (c *Core) keepProgress(t *task, pct uint64, note string) {
	c.progs[t.id] = taskProgress{percent: uint8(pct), note: strings.Clone(clipNote(note))}
}

// taskStateExtras appends the optional keys of protocol section 8.8 to a
// task_state reply. Progress shows while dispatched or running, durations
// once ended. Each is added only when the reply stays within max_frame and
// the key limit. A task whose outputs fill the reply shows none.
func (c *Core) taskStateExtras(b *wire.Builder, t *task) {
	fits := func(n, k int) bool { return b.Len()+n <= c.cfg.MaxFrame && b.Keys()+k <= wire.MaxKeys }
	switch {
	case t.state == Dispatched || t.state == Running:
		pr, ok := c.progs[t.id]
		if !ok {
			return
		}
		n := len("\nprogress=100")
		k := 1
		if pr.note != "" {
			n += len("\nprogress_note=") + wire.EscapedLen(pr.note)
			k++
		}
		if fits(n, k) {
			b.Uint("progress", uint64(pr.percent))
			if pr.note != "" {
				b.Str("progress_note", pr.note)
			}
		}
	case t.state.Terminal():
		queued, run, started := durations(t)
		n := len("\nqueued_ms=") + 20 + len("\nrun_ms=") + 20
		if t.startOff == startTooLate || !fits(n, 2) {
			return
		}
		b.Int("queued_ms", queued)
		if started {
			b.Int("run_ms", run)
		}
	}
}

// durations are an ended task's queued and run times (protocol section
// 8.8). Queued runs from creation to the start of its last attempt, and
// run from that start to the end. With no start, queued runs to the end
// and started is false.
func durations(t *task) (queued, run int64, started bool) {
	end := t.updatedMs
	if t.startOff == 0 {
		return max(0, end-t.createdMs), 0, false
	}
	start := t.createdMs + int64(t.startOff-1)
	return start - t.createdMs, max(0, end-start), true
}
