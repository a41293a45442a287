package maincontrol

import (
	"slices"
	"time"

	"github.com/panjf2000/gnet/v2"
)

// Incomplete frames. gnet holds each connection's partial frame, up to the
// max frame, for as long as the connection stays open. So checkPartials
// picks connections to judge. One is a connection whose frame made no
// progress for FrameStallTimeout. It is judged at once, and cut unless it
// progressed since. Others are picked while all connections together hold
// more than MaxPartialTotal. Those whose frame grew least recently are
// judged after partialGrace. They are cut unless partialMinProgress more
// arrived. An uploader sending a big frame steadily is spared. A peer
// adding a byte now and then is not. The grace is short because of a peer
// that opens connections fast, each with a max frame. It holds about its
// rate times the grace.

// A connection picked for crowding must receive partialMinProgress more
// of its frame within partialGrace (16 KiB/s) to be spared.
const (
	partialGrace       = 250 * time.Millisecond
	partialMinProgress = 4 << 10
)

// notePartial records whether cn's input ends in an incomplete frame
// once readFrames is done with it. more means readFrames stopped early, so
// what is left may be whole frames. handled means it handled a frame.
// notePartial judges cn when checkPartials picked it and its time came.
// It returns why cn must be cut off, or "". Progress is new bytes or a
// handled frame, and a wake without either is none. The server holds the
// input of a paused or output-blocked connection. The peer did not leave
// it incomplete. It runs with Server.mu held, on cn's event loop.
func (f *flow) notePartial(cn *conn, gc gnet.Conn, more, handled bool) string {
	n := gc.InboundBuffered()
	if n == 0 && cn.flow.partial == 0 && cn.flow.partialCut == "" {
		return "" // the usual turn: nothing left over, nothing to judge
	}
	_, blocked := f.outBlocked[cn] // whole frames left unread on purpose
	incomplete := !more && n > 0 && !blocked && !cn.flow.paused && !cn.closing && !cn.dead
	now := f.now()
	if why := cn.flow.partialCut; why != "" && !now.Before(cn.flow.partialDue) {
		got := cn.flow.consumed + n - cn.flow.partialMark
		cn.flow.partialCut = ""
		if incomplete && got < cn.flow.partialNeed {
			f.log.Info("frame left incomplete: connection closed", "peer", cn.id, "remote", gc.RemoteAddr(),
				"why", why, "buffered", n, "for", now.Sub(cn.flow.partialSince).Round(time.Second))
			f.setPartial(cn, 0)
			return why
		}
	}
	switch {
	case !incomplete:
		cn.flow.partialCut = ""
		f.setPartial(cn, 0)
	case n != cn.flow.partial || handled:
		f.setPartial(cn, n)
		cn.flow.partialSince = now
	}
	return ""
}

// setPartial sets the bytes cn holds in an incomplete frame, 0 for none.
// It keeps flow.partials and flow.partialTotal in step.
func (f *flow) setPartial(cn *conn, n int) {
	f.partialTotal += n - cn.flow.partial
	cn.flow.partial = n
	if n == 0 {
		delete(f.partials, cn)
	} else {
		f.partials[cn] = struct{}{}
	}
}

// checkPartials picks connections to judge for their incomplete frames
// (see above). It wakes those whose time came, so their own event loop
// judges them (notePartial). It looks a few times per timeout, and at
// every tick while over the total. New connections can each bring a max
// frame within a second. It runs with Server.mu held.
func (f *flow) checkPartials() {
	now := f.now()
	crowded := f.partialTotal > f.cfg.MaxPartialTotal
	if len(f.partials) == 0 || !crowded && now.Sub(f.partialsSeen) < min(time.Second, f.cfg.FrameStallTimeout/4) {
		return
	}
	f.partialsSeen = now
	pick := func(cn *conn, why string, due time.Time, need int) {
		cn.flow.partialCut, cn.flow.partialDue, cn.flow.partialNeed = why, due, need
		cn.flow.partialMark = cn.flow.consumed + cn.flow.partial
	}
	held := f.partialTotal
	var rest []*conn
	for cn := range f.partials {
		switch {
		case cn.flow.partialCut != "":
			held -= cn.flow.partial
			if !now.Before(cn.flow.partialDue) {
				f.wakes.mark(cn)
			}
		case now.Sub(cn.flow.partialSince) >= f.cfg.FrameStallTimeout:
			pick(cn, "frame left incomplete for "+f.cfg.FrameStallTimeout.String(), now, 1)
			held -= cn.flow.partial
			f.wakes.mark(cn)
		case crowded:
			rest = append(rest, cn)
		}
	}
	if held <= f.cfg.MaxPartialTotal {
		return
	}
	slices.SortFunc(rest, func(a, b *conn) int { return a.flow.partialSince.Compare(b.flow.partialSince) })
	for _, cn := range rest {
		if held <= f.cfg.MaxPartialTotal {
			break
		}
		pick(cn, "too much held in incomplete frames", now.Add(partialGrace), partialMinProgress)
		held -= cn.flow.partial
	}
}
