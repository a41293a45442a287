package maincontrol

import (
	"log/slog"
	"time"

	"github.com/apollo11/apollo11/maincontrol/core"
)

// flow is the server's flow control. It keeps any one peer from making
// the main control hold unbounded input or output. It has five mechanisms.
//
//   - Pause. A connection with more than MaxInflight frames awaiting disk
//     is not read. Its input meanwhile is capped per connection
//     (MaxPausedInbound) and in all (MaxPausedTotal).
//   - Share. readFrames stops reading a connection whose replies and
//     unsent output pass its share (overShare). One stopped with nothing
//     to write waits for the tick (outBlocked, wakeBlocked).
//   - Outbound watch. A peer that does not read its output is cut off
//     (outbound.go).
//   - Incomplete frames. A peer that trickles a frame, or holds too much
//     in them, is cut off (partial.go).
//   - Backlog. The core holds optional output back from a busy peer
//     (backlogged).
//
// The read budget (Config.ReadBudget) bounds one connection's turn at the
// core. It stays in readFrames. Server.mu guards flow.
type flow struct {
	cfg   *Config
	log   *slog.Logger
	wakes *wakeList

	pausedBytes  int                // unread input of paused connections (connFlow.pausedBytes)
	unsentTotal  int                // gnet's unsent output over all connections (connFlow.unsent)
	partials     map[*conn]struct{} // connections holding an incomplete frame (connFlow.partial)
	partialTotal int                // bytes of incomplete frames over all connections
	partialsSeen time.Time          // when checkPartials last looked
	outBlocked   map[*conn]struct{} // not read for their unsent output (readFrames)
	watched      map[*conn]struct{} // judged for their unsent output after OutboundGrace
}

// connFlow is one connection's part of the flow control.
type connFlow struct {
	paused bool // reading paused: too many frames awaiting disk
	// pausedBytes is the input buffered unread when reading last paused,
	// counted in flow.pausedBytes until it resumes or closes.
	pausedBytes int
	// unsent is gnet's unsent output for it when last looked at (after
	// its last write), counted in flow.unsentTotal.
	unsent int
	// partial is the input buffered when last seen ending in an
	// incomplete frame (0: none), counted in flow.partialTotal; it last
	// made progress at partialSince. consumed is all the input its frames
	// took. partialCut: checkPartials picked it (the reason), to be cut
	// at partialDue unless partialNeed bytes arrived past partialMark
	// (consumed+partial when picked).
	partial                  int
	partialSince, partialDue time.Time
	partialCut               string
	consumed                 int
	partialMark, partialNeed int
	// written is all it handed gnet to send; watchSince (zero: not
	// watched), watchUnsent and watchWritten are the time, unsent and
	// written when it was last watched for its unsent output.
	written                   int
	watchSince                time.Time
	watchUnsent, watchWritten int
}

func newFlow(cfg *Config, log *slog.Logger, wakes *wakeList) *flow {
	return &flow{cfg: cfg, log: log, wakes: wakes, partials: make(map[*conn]struct{}),
		outBlocked: make(map[*conn]struct{}), watched: make(map[*conn]struct{})}
}

func (f *flow) now() time.Time { return f.cfg.Core.Clock.Now() }

// pause stops reading cn, which buffers inbound bytes unread. It reports
// whether cn sent too much while paused and must be cut off.
func (f *flow) pause(cn *conn, inbound int) bool {
	cn.flow.paused = true
	f.notePaused(cn, inbound)
	return cn.flow.pausedBytes > f.cfg.MaxPausedInbound || f.pausedBytes > f.cfg.MaxPausedTotal
}

// resume reads cn again.
func (f *flow) resume(cn *conn) {
	if cn.flow.paused {
		f.notePaused(cn, 0)
	}
	cn.flow.paused = false
}

// mayResume reports whether a paused cn has few enough frames held to be
// read again.
func (f *flow) mayResume(cn *conn) bool {
	return cn.flow.paused && cn.held <= f.cfg.MaxInflight
}

// notePaused records that cn holds n bytes of input unread while paused,
// and keeps the total. n is 0 once cn resumed or closed.
func (f *flow) notePaused(cn *conn, n int) {
	f.pausedBytes += n - cn.flow.pausedBytes
	cn.flow.pausedBytes = n
}

// forget drops a closed connection from every count.
func (f *flow) forget(cn *conn) {
	f.notePaused(cn, 0)
	f.unsentTotal -= cn.flow.unsent
	f.setPartial(cn, 0)
	delete(f.outBlocked, cn)
	delete(f.watched, cn)
}

// busy reports whether some connection waits on the flow control's timed
// work. That is a blocked or watched output, or output or incomplete
// frames over their totals. The tick then comes every TickInterval.
func (f *flow) busy() bool {
	return len(f.outBlocked) > 0 || len(f.watched) > 0 || f.unsentTotal > f.cfg.MaxOutboundTotal ||
		f.partialTotal > f.cfg.MaxPartialTotal
}

// nextLook is when checkPartials next needs to look, if it does.
func (f *flow) nextLook() (time.Time, bool) {
	if len(f.partials) == 0 {
		return time.Time{}, false
	}
	return f.partialsSeen.Add(min(time.Second, f.cfg.FrameStallTimeout/4)), true
}

// tick is the flow control's timed work. It watches the heaviest outputs,
// and wakes the blocked and those whose judgement is due.
func (f *flow) tick(conns map[core.PeerID]*conn) {
	f.relieveOutbound(conns)
	f.wakeBlocked()
	f.checkPartials()
}
