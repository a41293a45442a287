package wire

import (
	"encoding/binary"
	"math/bits"
)

// Word-at-a-time scanning. Values are mostly plain ASCII without the three
// bytes that need escaping, so the codec checks eight bytes per step and
// falls back to byte loops only near a special byte.

const (
	lo8 = 0x0101010101010101
	hi8 = 0x8080808080808080
)

// zeroBytes marks (with 0x80) the lowest zero byte of x exactly; marks above
// it may be false positives, which is harmless as only the lowest is used.
func zeroBytes(x uint64) uint64 { return (x - lo8) &^ x & hi8 }

// specialMask marks bytes equal to LF, '=' or '\'.
func specialMask(x uint64) uint64 {
	return zeroBytes(x^(lo8*'\n')) | zeroBytes(x^(lo8*'=')) | zeroBytes(x^(lo8*'\\'))
}

// indexSpecial returns the index of the first LF, '=' or '\' in b at or after
// i, or len(b).
func indexSpecial(b []byte, i int) int {
	for ; i+8 <= len(b); i += 8 {
		if m := specialMask(binary.LittleEndian.Uint64(b[i:])); m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
	}
	for ; i < len(b); i++ {
		switch b[i] {
		case '\n', '=', '\\':
			return i
		}
	}
	return len(b)
}

// plainValue reports whether v is ASCII with nothing to escape, so that it
// can be copied as is (ASCII is valid UTF-8).
func plainValue(v string) bool {
	i := 0
	for ; i+8 <= len(v); i += 8 {
		x := uint64(v[i]) | uint64(v[i+1])<<8 | uint64(v[i+2])<<16 | uint64(v[i+3])<<24 |
			uint64(v[i+4])<<32 | uint64(v[i+5])<<40 | uint64(v[i+6])<<48 | uint64(v[i+7])<<56
		if x&hi8 != 0 || specialMask(x) != 0 {
			return false
		}
	}
	for ; i < len(v); i++ {
		switch c := v[i]; {
		case c >= 0x80, c == '\n', c == '=', c == '\\':
			return false
		}
	}
	return true
}
