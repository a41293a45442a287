package wire

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"
	"unicode/utf8"
)

// AppendFrame appends m as a whole frame, length header and payload, to dst.
// It returns the extended slice. It writes `type` first, then the other
// keys in order, escaping every value. It refuses invalid keys, a key that
// appears twice, values that are not UTF-8, more than MaxKeys keys and a
// message without type. On error dst is returned unchanged. It does not
// allocate when dst has the capacity.
func AppendFrame(dst []byte, m *Message) ([]byte, error) {
	fields := m.Fields
	typ := -1
	for i := range fields {
		if fields[i].Key == "type" {
			typ = i
			break
		}
	}
	if typ < 0 {
		return dst, fmt.Errorf("%w: message has no type", ErrKey)
	}
	if len(fields) > MaxKeys {
		return dst, fmt.Errorf("%w: %d keys, max %d", ErrKey, len(fields), MaxKeys)
	}
	// Small messages check for repeated keys with a fingerprint set as they
	// go. Big ones build a hash table first.
	var seen [4]uint64
	if len(fields) > smallMessage {
		if i := duplicateKey(fields); i >= 0 {
			return dst, keyError(fields[i].Key, "duplicate key")
		}
	}
	buf := append(dst, 0, 0, 0, 0, 't', 'y', 'p', 'e', '=')
	buf, err := appendValue(buf, fields[typ].Value)
	if err != nil {
		return dst, err
	}
	small := len(fields) <= smallMessage
	for i := range fields {
		k := fields[i].Key
		if small {
			fp := keyFingerprint(k)
			word, bit := fp>>6&3, uint64(1)<<(fp&63)
			if seen[word]&bit != 0 && hasKey(fields[:i], k) {
				return dst, keyError(k, "duplicate key")
			}
			seen[word] |= bit
		}
		if i == typ {
			continue
		}
		if buf, err = appendField(buf, k, fields[i].Value); err != nil {
			return dst, err
		}
	}
	binary.BigEndian.PutUint32(buf[len(dst):], uint32(len(buf)-len(dst)-HeaderLen))
	return buf, nil
}

// smallMessage is the most fields for which a repeated key is searched by
// comparing with every earlier key after a fingerprint match.
const smallMessage = smallNKeys

// appendField appends one line, LF key '=' value, checking the key and
// escaping the value. On error buf is returned as it was.
func appendField(buf []byte, k, v string) ([]byte, error) {
	if !keyOK(k) {
		return buf, keyError(k, keyProblem(k))
	}
	if !plainString(v) {
		return appendFieldSlow(buf, k, v)
	}
	n := len(buf)
	need := 2 + len(k) + len(v)
	if cap(buf)-n < need {
		buf = slices.Grow(buf, need)
	}
	buf = buf[:n+need]
	line := buf[n:]
	line[0] = '\n'
	copy(line[1:], k)
	line[1+len(k)] = '='
	copy(line[2+len(k):], v)
	return buf, nil
}

func appendFieldSlow(buf []byte, k, v string) ([]byte, error) {
	if !utf8.ValidString(v) {
		return buf, fmt.Errorf("%w: value of %q is not UTF-8", ErrValue, clip(k))
	}
	buf = append(buf, '\n')
	buf = append(buf, k...)
	buf = append(buf, '=')
	return appendEscaped(buf, v), nil
}

// appendValue appends v escaped. On error the value is not appended.
func appendValue(buf []byte, v string) ([]byte, error) {
	if plainString(v) {
		return append(buf, v...), nil
	}
	if !utf8.ValidString(v) {
		return buf, fmt.Errorf("%w: not UTF-8", ErrValue)
	}
	return appendEscaped(buf, v), nil
}

// keyOK is keyProblem(k) == "" for the hot paths.
func keyOK(k string) bool {
	if uint(len(k)-1) >= MaxKeyLen || !keyBytes(k) {
		return false
	}
	return k[len(k)-1] != '.' || !barePrefix(k)
}

// barePrefix reports whether k is exactly one of the namespace prefixes.
func barePrefix(k string) bool {
	switch k {
	case PrefixArg, PrefixOut, PrefixState, PrefixStateSet, PrefixStateAdd:
		return true
	}
	return false
}

func keyError(k, problem string) error {
	return fmt.Errorf("%w %q: %s", ErrKey, clip(k), problem)
}

// duplicateKey returns the index of the first field whose key repeats an
// earlier field's, or -1.
func duplicateKey(fields []Field) int {
	var table [tableSize]uint16 // on the stack: AppendFrame does not allocate
	s := keySet{table: &table}
	s.reset()
	for i := range fields {
		if s.repeated(fields[:i], fields[i].Key) {
			return i
		}
	}
	return -1
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
// first. It is the hot-path encoder. Keys are validated and values escaped
// as they are added. The first error sticks until Finish.
//
//	b := wire.Begin(buf, KindPong)
//	b.Uint("seq", 7)
//	buf, err = b.Finish()
type Builder struct {
	buf   []byte
	start int
	keys  int
	err   error
}

// Begin starts a frame of the given type at the end of dst.
func Begin(dst []byte, typ Kind) Builder {
	b := Builder{buf: dst, start: len(dst), keys: 1}
	b.buf = append(b.buf, 0, 0, 0, 0, 't', 'y', 'p', 'e', '=')
	b.buf, b.err = appendValue(b.buf, string(typ))
	return b
}

// key starts the line of key k. It reports false after an error.
func (b *Builder) key(k string) bool {
	if b.err != nil {
		return false
	}
	if !keyOK(k) {
		b.err = keyError(k, keyProblem(k))
		return false
	}
	b.buf = append(b.buf, '\n')
	b.buf = append(b.buf, k...)
	b.buf = append(b.buf, '=')
	b.keys++
	return true
}

// value appends v escaped, unless an error came first.
func (b *Builder) value(v string) {
	if b.err != nil {
		return
	}
	buf, err := appendValue(b.buf, v)
	if err != nil {
		b.err = err
		return
	}
	b.buf = buf
}

// Str adds key k with string value v.
func (b *Builder) Str(k, v string) {
	if b.err != nil {
		return
	}
	buf, err := appendField(b.buf, k, v)
	if err != nil {
		b.err = err
		return
	}
	b.buf = buf
	b.keys++
}

// PrefixStr adds key prefix+k with value v (arg.*, out.*, state.*). The
// whole key is checked as Str would check prefix+k, so PrefixStr("state.",
// "set.") is refused as a bare prefix.
func (b *Builder) PrefixStr(prefix, k, v string) {
	if b.err != nil {
		return
	}
	if p := prefixedKeyProblem(prefix, k); p != "" {
		b.err = keyError(prefix+clip(k), p)
		return
	}
	b.buf = append(b.buf, '\n')
	b.buf = append(b.buf, prefix...)
	b.buf = append(b.buf, k...)
	b.buf = append(b.buf, '=')
	b.keys++
	b.value(v)
}

// prefixedKeyProblem is keyProblem(prefix+k) without the concatenation.
func prefixedKeyProblem(prefix, k string) string {
	n := len(prefix) + len(k)
	switch {
	case n == 0:
		return "empty key"
	case n > MaxKeyLen:
		return "key longer than 64 bytes"
	case !keyBytes(prefix) || !keyBytes(k):
		return "key byte not in a-z 0-9 _ . -"
	}
	last := prefix
	if k != "" {
		last = k
	}
	if last[len(last)-1] != '.' {
		return ""
	}
	for _, p := range [...]string{PrefixArg, PrefixOut, PrefixState, PrefixStateSet, PrefixStateAdd} {
		if len(p) == n && p[:len(prefix)] == prefix && p[len(prefix):] == k {
			return "key is a bare prefix"
		}
	}
	return ""
}

// Uint adds key k with a number.
func (b *Builder) Uint(k string, v uint64) {
	if b.key(k) {
		b.buf = appendUint(b.buf, v)
	}
}

// Int adds key k with a signed integer.
func (b *Builder) Int(k string, v int64) {
	if b.key(k) {
		b.buf = strconv.AppendInt(b.buf, v, 10)
	}
}

// Bool adds key k with true or false.
func (b *Builder) Bool(k string, v bool) {
	if b.key(k) {
		b.buf = strconv.AppendBool(b.buf, v)
	}
}

// List adds key k with a comma-separated list of items. The caller makes
// sure no item is empty or holds a comma.
func (b *Builder) List(k string, items []string) {
	if !b.key(k) {
		return
	}
	for i, it := range items {
		if i > 0 {
			b.buf = append(b.buf, ',')
		}
		b.value(it)
	}
}

// Raw appends pre-encoded lines, as an earlier Builder made them or a
// decoded payload held them. They are `key=escaped value` lines joined by
// LF, with no LF before or after. Empty raw adds nothing. keys is how many
// lines raw holds, for the key-count limit.
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

// Keys returns the number of keys written so far, type included.
func (b *Builder) Keys() int { return b.keys }

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
