package core

import (
	"encoding/binary"
	"unsafe"

	"github.com/apollo11/apollo11/wire"
)

// A task submitted without a trace_id gets one the main control makes. It
// is not stored. It is derived when needed from the task's id and creation
// time, which are durable. So it is the same after a restart, and costs no
// allocation per submit and no memory per task. The first half is a
// bijection of the id, so two tasks of one main control never share one.
// The second half mixes in the creation time. So ids reused by a fresh
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
	return derivedTrace(t.id, t.createdMs)
}

// derivedTrace returns the trace id of task id created at createdMs when
// its submitter gave none.
func derivedTrace(id uint64, createdMs int64) string {
	var buf [32]byte
	deriveTrace(&buf, id, createdMs)
	return string(buf[:])
}

// deriveTrace writes the 32 hex digits of the trace id of task id created
// at createdMs.
func deriveTrace(buf *[32]byte, id uint64, createdMs int64) {
	hi := mix64(id + 0x9e3779b97f4a7c15)
	lo := mix64(uint64(createdMs)*0xff51afd7ed558ccd ^ hi)
	putHex8(buf[0:8], uint32(hi>>32))
	putHex8(buf[8:16], uint32(hi))
	putHex8(buf[16:24], uint32(lo>>32))
	putHex8(buf[24:32], uint32(lo))
}

// putHex8 writes v as 8 lower-case hex digits, all in one register. Every
// dispatch frame carries a derived trace id, and a digit at a time cost
// about 270 instructions a frame.
func putHex8(dst []byte, v uint32) {
	x := uint64(v)
	// Spread the nibbles to one per byte, most significant first.
	x = (x | x<<16) & 0x0000ffff0000ffff
	x = (x | x<<8) & 0x00ff00ff00ff00ff
	x = (x | x<<4) & 0x0f0f0f0f0f0f0f0f
	// This is 1 in each byte whose nibble is 10 or more. Those skip to 'a'.
	letters := (x + 0x0606060606060606) >> 4 & 0x0101010101010101
	binary.BigEndian.PutUint64(dst, x+0x3030303030303030+letters*('a'-'0'-10))
}

// mix64 is SplitMix64's finalizer, a bijection that scatters its input.
func mix64(z uint64) uint64 {
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// traceLen is the encoded length of a trace id, its own or a derived one.
func traceLen(own string) int {
	if own == "" {
		return 32
	}
	return wire.EscapedLen(own)
}
