package wire

import (
	"encoding/binary"
	"math/bits"
)

// Scanning helpers for the codec's hot paths. Values can be long, so they
// are checked eight bytes per step. Keys are short, so byte loops check
// them without a branch per byte. A fingerprint set finds duplicate keys,
// with a hash table for big payloads.

const (
	lo8 = 0x0101010101010101
	hi8 = 0x8080808080808080
)

// le64 loads the 8 bytes at b[i:] little-endian. The byte at the lowest
// address is the lowest byte, so TrailingZeros64(mask)>>3 indexes from i.
func le64(b []byte, i int) uint64 { return binary.LittleEndian.Uint64(b[i:]) }

// zeroBytes marks the lowest zero byte of x exactly, with 0x80. Marks above
// it may be false positives. That is harmless, as only the lowest is used.
func zeroBytes(x uint64) uint64 { return (x - lo8) &^ x & hi8 }

// specialMask marks bytes equal to LF, '=' or '\'. The lowest mark is exact.
func specialMask(x uint64) uint64 {
	return zeroBytes(x^(lo8*'\n')) | zeroBytes(x^(lo8*'=')) | zeroBytes(x^(lo8*'\\'))
}

// The masks below are exact in every byte. They work on y = x &^ hi8, whose
// bytes are at most 0x7f, so that adding at most 0x7f to each byte never
// carries into the next one.

// eq7 sets the high bit of each byte of y (7-bit bytes) equal to c.
func eq7(y uint64, c byte) uint64 { return ^((y ^ lo8*uint64(c)) + lo8*0x7f) }

// escapeMask marks exactly the bytes of x that an encoder cannot copy as
// they are. Those are LF, '=', '\' and every non-ASCII byte.
func escapeMask(x uint64) uint64 {
	y := x &^ hi8
	return (x | eq7(y, '\n') | eq7(y, '=') | eq7(y, '\\')) & hi8
}

// specialByte marks LF, '=' and '\'.
var specialByte = [256]bool{'\n': true, '=': true, '\\': true}

// keyBytes reports whether every byte of k is a key byte. The loop takes
// four bytes per step with no branch per byte. Keys are short, and an
// early exit costs more than it saves.
func keyBytes(k string) bool {
	bad := byte(0)
	i := 0
	for ; i+4 <= len(k); i += 4 {
		bad |= nonKeyByte[k[i]] | nonKeyByte[k[i+1]] | nonKeyByte[k[i+2]] | nonKeyByte[k[i+3]]
	}
	for ; i < len(k); i++ {
		bad |= nonKeyByte[k[i]]
	}
	return bad == 0
}

// nonKeyByte is 1 for every byte that is not a key byte.
var nonKeyByte = func() (t [256]byte) {
	for c := range t {
		if !keyByte[c] {
			t[c] = 1
		}
	}
	return t
}()

// escapeByte is 1 for the bytes a value cannot hold as they are. Those are
// LF, '=', '\' and every non-ASCII byte.
var escapeByte = func() (t [256]byte) {
	for c := range t {
		if c >= 0x80 || c == '\n' || c == '=' || c == '\\' {
			t[c] = 1
		}
	}
	return t
}()

// plainString reports whether v can be written as a value without escaping
// or UTF-8 checks. That holds for ASCII without LF, '=' or '\'. Values of 8
// bytes or more are checked a word at a time. The last word overlaps the
// one before.
func plainString(v string) bool {
	if len(v) < 8 {
		bad := byte(0)
		for i := 0; i < len(v); i++ {
			bad |= escapeByte[v[i]]
		}
		return bad == 0
	}
	for i := 0; i+8 < len(v); i += 8 {
		if escapeMask(load64(v[i:])) != 0 {
			return false
		}
	}
	return escapeMask(load64(v[len(v)-8:])) == 0
}

// keyFingerprint is a cheap 8-bit hash of a non-empty key, from its length
// and four of its bytes (the last two tell numbered keys apart).
func keyFingerprint(k string) uint64 {
	n := len(k)
	if n == 0 {
		return 0
	}
	x := uint64(n)<<32 | uint64(k[0])<<24 | uint64(k[n>>1])<<16 | uint64(k[n-1])
	if n >= 2 {
		x |= uint64(k[n-2]) << 8
	}
	return x * 0x9e3779b97f4a7c15 >> 56
}

// keyHash hashes a key for the duplicate-key checks. It mixes the length
// with the first and last eight bytes, which overlap in short keys.
func keyHash(k string) uint64 {
	var h uint64
	if len(k) >= 8 {
		h = load64(k) ^ bits.RotateLeft64(load64(k[len(k)-8:]), 29)
	} else {
		for i := 0; i < len(k); i++ {
			h = h<<8 | uint64(k[i])
		}
	}
	return (h ^ uint64(len(k))) * 0x9e3779b97f4a7c15
}

// load64 reads s[:8] little-endian. len(s) is at least 8.
func load64(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// keySet finds repeated keys in one payload. For up to 32 keys, a 256-bit
// fingerprint set answers most keys. Only a fingerprint seen before costs
// a comparison with the earlier keys. Past 32 keys, an open-addressing
// hash table of field indexes takes over, so 1,024 keys cost linear time.
type keySet struct {
	seen   [4]uint64
	table  *[tableSize]uint16 // field index+1 per slot; nil until needed
	filled bool               // the table holds this payload's fields
}

const (
	tableSize  = 2048 // a power of two, at least twice MaxKeys
	smallNKeys = 32   // keys checked with the fingerprint set
)

// reset prepares s for a new payload, keeping its table's memory.
func (s *keySet) reset() {
	s.seen = [4]uint64{}
	s.filled = false
}

// repeated reports whether k is the key of one of fields, the keys so far
// of this payload. When it reports false, the caller appends k as
// fields[len(fields)]. The next call passes the longer slice.
func (s *keySet) repeated(fields []Field, k string) bool {
	if len(fields) < smallNKeys {
		fp := keyFingerprint(k)
		word, bit := fp>>6&3, uint64(1)<<(fp&63)
		if s.seen[word]&bit == 0 {
			s.seen[word] |= bit
			return false
		}
		return hasKey(fields, k)
	}
	if s.table == nil {
		s.table = new([tableSize]uint16)
	}
	if !s.filled {
		clear(s.table[:])
		for i := range fields {
			if j := s.free(fields[:i], fields[i].Key); j >= 0 {
				s.table[j] = uint16(i + 1)
			}
		}
		s.filled = true
	}
	i := s.free(fields, k)
	if i < 0 {
		return true
	}
	s.table[i] = uint16(len(fields) + 1)
	return false
}

// free returns the empty slot where k belongs, or -1 if k is in the table.
func (s *keySet) free(fields []Field, k string) int {
	i := keyHash(k) >> 53
	for ; s.table[i] != 0; i = (i + 1) & (tableSize - 1) {
		if fields[s.table[i]-1].Key == k {
			return -1
		}
	}
	return int(i)
}

// hasKey reports whether one of fields has key k.
func hasKey(fields []Field, k string) bool {
	for i := range fields {
		if fields[i].Key == k {
			return true
		}
	}
	return false
}
