package maincontrol

import (
	"time"

	"github.com/panjf2000/gnet/v2"

	"github.com/apollo11/apollo11/maincontrol/core"
)

// conn is the server's side of one connection. Every field is guarded by
// Server.mu.
type conn struct {
	id core.PeerID
	gc gnet.Conn
	// out holds frames released for writing; spare is the other buffer of
	// the pair, swapped in while out is being written.
	out, spare []byte
	closeAfter bool // close once out is written
	closing    bool // read no more input
	queued     bool // in Server.dirty, a wake is pending
	held       int  // frames waiting for their records to be durable
	gated      int  // of those, task frames (Server.gated)
	paused     bool // reading paused: too many replies awaiting disk
	// pausedBytes is the input buffered unread when reading last paused,
	// counted in Server.pausedBytes until it resumes or closes.
	pausedBytes int
	dead        bool // gnet closed it
	// awaiting: in Server.unauth, not yet through its handshake, linked
	// to its neighbours there by prevNew and nextNew. evicted: closed to
	// make room for a newcomer, counted in Server.evicting (unauth.go).
	awaiting, evicted bool
	prevNew, nextNew  *conn
	// unsent is gnet's unsent output for it when last looked at (after
	// its last write), counted in Server.unsentTotal.
	unsent int
	// partial is the input buffered when last seen ending in an
	// incomplete frame (0: none), counted in Server.partialTotal; it last
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
	// written when it was last watched for its unsent output
	// (outbound.go).
	written                   int
	watchSince                time.Time
	watchUnsent, watchWritten int
}

// heldFrame is a frame (or a close, when close is set) waiting until the
// log is durable up to lsn.
type heldFrame struct {
	cn         *conn
	start, end int // in heldQueue.arena
	lsn        uint64
	order      uint64 // when it was held, to release both queues in order
	close      bool   // not a frame: close the connection
	confirms   bool   // sent with core.WaitConfirm, or a task frame
	gated      bool   // a task frame (Server.gated)
}

// heldQueue keeps held frames in the order they were held, which is LSN
// order except for task frames (Server.gated); frames live in one arena so
// that holding a frame costs a copy, not an allocation.
type heldQueue struct {
	items []heldFrame
	head  int
	arena []byte
}

func (q *heldQueue) len() int { return len(q.items) - q.head }

// push holds frame (nil for a close) as h, whose place in the arena it
// sets.
func (q *heldQueue) push(h heldFrame, frame []byte) {
	h.start = len(q.arena)
	q.arena = append(q.arena, frame...)
	h.end = len(q.arena)
	q.items = append(q.items, h)
}

// ready returns the first held item if it is durable at lsn, else nil.
func (q *heldQueue) ready(lsn uint64) *heldFrame {
	if q.head < len(q.items) && q.items[q.head].lsn <= lsn {
		return &q.items[q.head]
	}
	return nil
}

// pop hands the first held item to fn and drops it; compact later.
func (q *heldQueue) pop(fn func(h *heldFrame, frame []byte)) {
	h := &q.items[q.head]
	fn(h, q.arena[h.start:h.end])
	q.items[q.head] = heldFrame{}
	q.head++
}

// extract hands fn, in order, every held item that keep refuses, and
// keeps the others in order. The arena is compacted in place: kept frames
// only move towards the front, after fn has seen what they overwrite.
func (q *heldQueue) extract(keep func(h *heldFrame, frame []byte) bool, fn func(h *heldFrame, frame []byte)) {
	k, pos := 0, 0
	for i := q.head; i < len(q.items); i++ {
		h := q.items[i]
		frame := q.arena[h.start:h.end]
		if !keep(&h, frame) {
			fn(&h, frame)
			continue
		}
		n := copy(q.arena[pos:], frame)
		h.start, h.end = pos, pos+n
		pos += n
		q.items[k] = h
		k++
	}
	clear(q.items[k:])
	q.items, q.head, q.arena = q.items[:k], 0, q.arena[:pos]
}

// compact drops released frames once they are half the queue, keeping the
// arena proportional to what is still held.
func (q *heldQueue) compact() {
	if q.head == len(q.items) {
		q.items, q.head, q.arena = q.items[:0], 0, q.arena[:0]
		return
	}
	if q.head < 1024 || q.head < len(q.items)/2 {
		return
	}
	base := q.items[q.head].start
	n := copy(q.arena, q.arena[base:])
	q.arena = q.arena[:n]
	m := copy(q.items, q.items[q.head:])
	clear(q.items[m:])
	q.items = q.items[:m]
	for i := range q.items {
		q.items[i].start -= base
		q.items[i].end -= base
	}
	q.head = 0
}

// notePaused records that cn holds n bytes of input unread while paused
// (0: none, it resumed or closed), keeping the server's total. Called with
// s.mu held.
func (s *Server) notePaused(cn *conn, n int) {
	s.pausedBytes += n - cn.pausedBytes
	cn.pausedBytes = n
}
