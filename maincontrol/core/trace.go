package core

import (
	"encoding/hex"
	"strings"
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

// traceInto returns t's trace id, derived into buf when t has none of its
// own. The result may alias buf.
func (t *task) traceInto(buf *[32]byte) string {
	if own := t.ownTrace(); own != "" {
		return own
	}
	deriveTrace(buf, t.id, t.createdMs)
	return unsafe.String(&buf[0], len(buf))
}

// trace returns t's trace id as a string of its own.
func (t *task) trace() string {
	var buf [32]byte
	return strings.Clone(t.traceInto(&buf))
}

// deriveTrace writes the 32 hex digits of the trace id of task id created
// at createdMs.
func deriveTrace(buf *[32]byte, id uint64, createdMs int64) {
	hi := mix64(id + 0x9e3779b97f4a7c15)
	lo := mix64(uint64(createdMs)*0xff51afd7ed558ccd ^ hi)
	var raw [16]byte
	for i := range 8 {
		raw[i] = byte(hi >> (56 - 8*i))
		raw[8+i] = byte(lo >> (56 - 8*i))
	}
	hex.Encode(buf[:], raw[:])
}

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
