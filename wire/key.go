package wire

import "strconv"

// Key is a key validated once, when it is made. Hot paths that write the
// same keys millions of times (the main control's replies) use Key with the
// Builder's K methods to skip re-validating them; keys that come from
// outside go through the validating methods instead.
type Key struct {
	s    string
	line string // "\n" + s + "=": what the Builder appends before a value
}

// MustKey returns s as a Key, panicking if it is not a valid key. It is
// meant for package-level variables, so a bad key fails at start-up.
func MustKey(s string) Key {
	if p := keyProblem(s); p != "" {
		panic("wire: invalid key " + strconv.Quote(s) + ": " + p)
	}
	return Key{s: s, line: "\n" + s + "="}
}

// String returns the key.
func (k Key) String() string { return k.s }

func (b *Builder) trustedKey(k Key) {
	if b.err != nil {
		return
	}
	if k.s == "" { // the zero Key, not made by MustKey
		b.err = keyError("", "empty key")
		return
	}
	b.keys++
	b.buf = append(b.buf, k.line...)
}

// StrK adds a pre-validated key with a string value.
func (b *Builder) StrK(k Key, v string) {
	b.trustedKey(k)
	b.value(v)
}

// PlainK adds a pre-validated key with a value that needs no check and no
// escaping: one the caller made itself from bytes that cannot need it,
// such as hex digits. Anything that came from a peer goes through StrK.
func (b *Builder) PlainK(k Key, v string) {
	b.trustedKey(k)
	if b.err == nil {
		b.buf = append(b.buf, v...)
	}
}

// UintK adds a pre-validated key with a number.
func (b *Builder) UintK(k Key, v uint64) {
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
