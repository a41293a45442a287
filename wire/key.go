package wire

import (
	"encoding/binary"
	"slices"
	"strconv"
)

// Key is a key validated once, when it is made. The main control's replies
// write the same keys millions of times. They use Key with the Builder's K
// methods to skip validating again. Keys from outside go through the
// validating methods instead.
type Key struct {
	line string // "\n" + key + "=": what the Builder appends before a value
	// lo and hi hold line's bytes when it is 16 bytes or shorter. It is
	// then written as two 8-byte stores, without a call to memmove. A
	// task's three reply frames add fifteen keys. They are words, not an
	// array, so a Key still travels in registers.
	lo, hi uint64
}

// MustKey returns s as a Key, panicking if it is not a valid key. It is
// meant for package-level variables, so a bad key fails at start-up.
func MustKey(s string) Key {
	if p := keyProblem(s); p != "" {
		panic("wire: invalid key " + strconv.Quote(s) + ": " + p)
	}
	k := Key{line: "\n" + s + "="}
	var short [16]byte
	copy(short[:], k.line)
	k.lo = binary.LittleEndian.Uint64(short[:8])
	k.hi = binary.LittleEndian.Uint64(short[8:])
	return k
}

// String returns the key.
func (k Key) String() string {
	if k.line == "" {
		return ""
	}
	return k.line[1 : len(k.line)-1]
}

func (b *Builder) trustedKey(k Key) {
	if b.err != nil {
		return
	}
	if k.line == "" { // the zero Key, not made by MustKey
		b.err = keyError("", "empty key")
		return
	}
	b.keys++
	if len(k.line) > 16 {
		b.buf = append(b.buf, k.line...)
		return
	}
	n := len(b.buf)
	if cap(b.buf)-n < 16 {
		b.buf = slices.Grow(b.buf, 16)
	}
	w := b.buf[n : n+16]
	binary.LittleEndian.PutUint64(w[:8], k.lo)
	binary.LittleEndian.PutUint64(w[8:], k.hi)
	b.buf = b.buf[:n+len(k.line)]
}

// StrK adds a pre-validated key with a string value.
func (b *Builder) StrK(k Key, v string) {
	b.trustedKey(k)
	b.value(v)
}

// PlainK adds a pre-validated key with a value that needs no check and no
// escaping. The caller made the value itself, from bytes such as hex
// digits. Anything that came from a peer goes through StrK.
func (b *Builder) PlainK(k Key, v string) {
	b.trustedKey(k)
	if b.err == nil {
		b.buf = append(b.buf, v...)
	}
}

// UintK adds a pre-validated key with a number.
func (b *Builder) UintK(k Key, v uint64) {
	// Six of the nine numbers in a task's reply frames are one digit. With
	// a short key and room in the buffer, key and digit take three stores
	// here, without the calls of the general path.
	n := len(b.buf)
	if v < 10 && b.err == nil && uint(len(k.line)-1) < 16 && cap(b.buf)-n >= 17 {
		w := b.buf[n : n+17]
		binary.LittleEndian.PutUint64(w[:8], k.lo)
		binary.LittleEndian.PutUint64(w[8:16], k.hi)
		w[len(k.line)] = byte('0' + v)
		b.buf = b.buf[:n+len(k.line)+1]
		b.keys++
		return
	}
	b.trustedKey(k)
	if b.err == nil {
		b.buf = appendUint(b.buf, v)
	}
}

// IntK adds a pre-validated key with a signed integer.
func (b *Builder) IntK(k Key, v int64) {
	b.trustedKey(k)
	if b.err == nil {
		b.buf = strconv.AppendInt(b.buf, v, 10)
	}
}

// BoolK adds a pre-validated key with true or false.
func (b *Builder) BoolK(k Key, v bool) {
	b.trustedKey(k)
	if b.err == nil {
		b.buf = strconv.AppendBool(b.buf, v)
	}
}
