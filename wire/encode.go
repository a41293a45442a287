package wire

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// AppendFrame appends m as a whole frame (length header and payload) to dst
// and returns the extended slice. It writes `type` first, then the other
// keys in order, escaping every value. It refuses invalid keys, values that
// are not UTF-8, more than MaxKeys keys and a message without type; on error
// dst is returned unchanged. It does not allocate when dst has the capacity.
func AppendFrame(dst []byte, m *Message) ([]byte, error) {
	typ, ok := m.Get("type")
	if !ok {
		return dst, fmt.Errorf("%w: message has no type", ErrKey)
	}
	if len(m.Fields) > MaxKeys {
		return dst, fmt.Errorf("%w: %d keys, max %d", ErrKey, len(m.Fields), MaxKeys)
	}
	b := Begin(dst, typ)
	for i := range m.Fields {
		if f := &m.Fields[i]; f.Key != "type" {
			b.Str(f.Key, f.Value)
		}
	}
	return b.Finish()
}

// appendPayload writes the payload of m, type first, without validation.
func appendPayload(dst []byte, m *Message) []byte {
	typ, _ := m.Get("type")
	dst = append(dst, "type="...)
	dst = appendEscaped(dst, typ)
	for i := range m.Fields {
		f := &m.Fields[i]
		if f.Key == "type" {
			continue
		}
		dst = append(dst, '\n')
		dst = append(dst, f.Key...)
		dst = append(dst, '=')
		dst = appendEscaped(dst, f.Value)
	}
	return dst
}

// Builder appends one frame field by field, without building a Message
// first. It is the hot-path encoder: keys are validated and values escaped
// as they are added, and the first error sticks until Finish.
//
//	b := wire.Begin(buf, "pong")
//	b.Uint("seq", 7)
//	buf, err = b.Finish()
type Builder struct {
	buf   []byte
	start int
	keys  int
	err   error
}

// Begin starts a frame of the given type at the end of dst.
func Begin(dst []byte, typ string) Builder {
	b := Builder{buf: dst, start: len(dst)}
	b.buf = append(b.buf, 0, 0, 0, 0)
	b.buf = append(b.buf, "type="...)
	b.value(typ)
	b.keys = 1
	return b
}

func (b *Builder) key(k string) {
	if b.err != nil {
		return
	}
	if p := keyProblem(k); p != "" {
		b.err = fmt.Errorf("%w %q: %s", ErrKey, clip(k), p)
		return
	}
	b.keys++
	b.buf = append(b.buf, '\n')
	b.buf = append(b.buf, k...)
	b.buf = append(b.buf, '=')
}

func (b *Builder) value(v string) {
	if b.err != nil {
		return
	}
	if plainValue(v) {
		b.buf = append(b.buf, v...)
		return
	}
	if !utf8.ValidString(v) {
		b.err = fmt.Errorf("%w: not UTF-8", ErrValue)
		return
	}
	b.buf = appendEscaped(b.buf, v)
}

// Str adds key k with string value v.
func (b *Builder) Str(k, v string) {
	b.key(k)
	b.value(v)
}

// PrefixStr adds key prefix+k with value v (arg.*, out.*, state.*). The
// prefix must itself be valid key bytes, such as PrefixArg.
func (b *Builder) PrefixStr(prefix, k, v string) {
	if b.err != nil {
		return
	}
	if p := prefixedKeyProblem(prefix, k); p != "" {
		b.err = fmt.Errorf("%w %q: %s", ErrKey, clip(prefix+k), p)
		return
	}
	b.keys++
	b.buf = append(b.buf, '\n')
	b.buf = append(b.buf, prefix...)
	b.buf = append(b.buf, k...)
	b.buf = append(b.buf, '=')
	b.value(v)
}

// prefixedKeyProblem is keyProblem(prefix+k) without the concatenation.
func prefixedKeyProblem(prefix, k string) string {
	switch {
	case len(prefix)+len(k) > MaxKeyLen:
		return "key longer than 64 bytes"
	case k == "":
		return "key is a bare prefix"
	case prefix == PrefixState && (k == "set." || k == "add."):
		return "key is a bare prefix"
	}
	for i := 0; i < len(k); i++ {
		if !keyByte[k[i]] {
			return "key byte not in a-z 0-9 _ . -"
		}
	}
	return ""
}

// Uint adds key k with a number.
func (b *Builder) Uint(k string, v uint64) {
	b.key(k)
	if b.err == nil {
		b.buf = strconv.AppendUint(b.buf, v, 10)
	}
}

// Int adds key k with a signed integer.
func (b *Builder) Int(k string, v int64) {
	b.key(k)
	if b.err == nil {
		b.buf = strconv.AppendInt(b.buf, v, 10)
	}
}

// Bool adds key k with true or false.
func (b *Builder) Bool(k string, v bool) {
	b.key(k)
	if b.err == nil {
		b.buf = strconv.AppendBool(b.buf, v)
	}
}

// List adds key k with a comma-separated list of items. Items must not be
// empty or hold a comma; the caller guarantees it.
func (b *Builder) List(k string, items []string) {
	b.key(k)
	for i, it := range items {
		if i > 0 && b.err == nil {
			b.buf = append(b.buf, ',')
		}
		b.value(it)
	}
}

// Raw appends pre-encoded lines: one or more `key=escaped value` lines
// joined by LF, without a leading or trailing LF, as produced by an earlier
// Builder or kept from a decoded payload. Empty raw adds nothing. keys is
// how many lines raw holds, for the key-count limit.
func (b *Builder) Raw(raw []byte, keys int) {
	if b.err != nil || len(raw) == 0 {
		return
	}
	b.keys += keys
	b.buf = append(b.buf, '\n')
	b.buf = append(b.buf, raw...)
}

// RawString is Raw for a string.
func (b *Builder) RawString(raw string, keys int) {
	if b.err != nil || len(raw) == 0 {
		return
	}
	b.keys += keys
	b.buf = append(b.buf, '\n')
	b.buf = append(b.buf, raw...)
}

// Len returns the payload length so far.
func (b *Builder) Len() int { return len(b.buf) - b.start - 4 }

// Err returns the first error so far.
func (b *Builder) Err() error { return b.err }

// Finish writes the length header and returns the buffer with the whole
// frame appended. On error the buffer is returned as it was before Begin.
func (b *Builder) Finish() ([]byte, error) {
	if b.err == nil && b.keys > MaxKeys {
		b.err = fmt.Errorf("%w: %d keys, max %d", ErrKey, b.keys, MaxKeys)
	}
	if b.err != nil {
		return b.buf[:b.start], b.err
	}
	binary.BigEndian.PutUint32(b.buf[b.start:], uint32(len(b.buf)-b.start-4))
	return b.buf, nil
}
