package core

import (
	"unsafe"

	"github.com/apollo11/apollo11/wire"
)

// A task submitted without a trace_id gets one the main control makes. It is
// not stored: it is derived, when needed, from the task's id and creation
// time, which are durable, so it is the same after a restart and costs
// neither an allocation per submit nor memory per task. The first half is
// a bijection of the id, so two tasks of one main control never share one;
// the second half mixes in the creation time, so ids reused by a fresh
// data dir give different trace ids.

// addTrace adds t's trace_id to a frame. A derived one is hex digits and
// skips the escaping check that a submitter's own must pass.
func addTrace(b *wire.Builder, t *task) {
	if own := t.ownTrace(); own != "" {
		b.StrK(kTraceID, own)
		return
	}
	var buf [32]byte
	deriveTrace(&buf, t.id, t.createdMs)
	b.PlainK(kTraceID, unsafe.String(&buf[0], len(buf)))
}

// trace returns t's trace id.
func (t *task) trace() string {
	if own := t.ownTrace(); own != "" {
		return own // immutable, and cloned from the submit when stored
	}
	var buf [32]byte
	deriveTrace(&buf, t.id, t.createdMs)
	return string(buf[:])
}

// deriveTrace writes the 32 hex digits of the trace id of task id created
// at createdMs.
func deriveTrace(buf *[32]byte, id uint64, createdMs int64) {
	hi := mix64(id + 0x9e3779b97f4a7c15)
	lo := mix64(uint64(createdMs)*0xff51afd7ed558ccd ^ hi)
	// Big-endian hex of hi then lo, written nibble by nibble: every
	// dispatch frame carries one, and this is a fraction of hex.Encode's
	// cost on a byte copy.
	for i := 15; i >= 0; i-- {
		buf[i] = hexDigits[hi&15]
		buf[16+i] = hexDigits[lo&15]
		hi >>= 4
		lo >>= 4
	}
}

const hexDigits = "0123456789abcdef"

// mix64 is SplitMix64's finalizer: a bijection that scatters its input.
func mix64(z uint64) uint64 {
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// traceLen is the encoded length of a trace id: its own, or a derived one.
func traceLen(own string) int {
	if own == "" {
		return 32
	}
	return wire.EscapedLen(own)
}
