package wire

import "unicode/utf8"

// keyByte marks the bytes allowed in a key, which are a-z 0-9 _ . -
var keyByte = func() (t [256]bool) {
	for c := 'a'; c <= 'z'; c++ {
		t[c] = true
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	t['_'], t['.'], t['-'] = true, true, true
	return t
}()

// Prefixes of namespaced keys. A key that is exactly one of them is
// malformed in any payload (spec section 2).
const (
	PrefixArg      = "arg."
	PrefixOut      = "out."
	PrefixState    = "state."
	PrefixStateSet = "state.set."
	PrefixStateAdd = "state.add."
)

// ValidKey reports whether k is a well-formed key.
func ValidKey(k string) bool { return keyProblem(k) == "" }

// keyProblem returns why k is not a valid key, or "".
func keyProblem(k string) string {
	if len(k) == 0 {
		return "empty key"
	}
	if len(k) > MaxKeyLen {
		return "key longer than 64 bytes"
	}
	for i := 0; i < len(k); i++ {
		if !keyByte[k[i]] {
			return "key byte not in a-z 0-9 _ . -"
		}
	}
	if k[len(k)-1] == '.' { // only a key ending in '.' can be a bare prefix
		switch k {
		case PrefixArg, PrefixOut, PrefixState, PrefixStateSet, PrefixStateAdd:
			return "key is a bare prefix"
		}
	}
	return ""
}

// needsEscape reports whether v holds a byte that must be escaped.
func needsEscape(v string) bool { return escapeIndex(v) >= 0 }

// escapeIndex is the index of v's first byte that must be escaped, or -1.
func escapeIndex(v string) int {
	for i := 0; i < len(v); i++ {
		switch v[i] {
		case '\\', '\n', '=':
			return i
		}
	}
	return -1
}

// appendEscaped appends v with `\`, LF and `=` escaped. It copies the runs
// between escapes whole: error messages escape a `=` or two in a long text.
func appendEscaped(dst []byte, v string) []byte {
	for {
		i := escapeIndex(v)
		if i < 0 {
			return append(dst, v...)
		}
		dst = append(dst, v[:i]...)
		switch v[i] {
		case '\\':
			dst = append(dst, '\\', '\\')
		case '\n':
			dst = append(dst, '\\', 'n')
		default: // '='
			dst = append(dst, '\\', 'e')
		}
		v = v[i+1:]
	}
}

// EscapedLen returns the length of v once escaped.
func EscapedLen(v string) int {
	n := len(v)
	for i := 0; i < len(v); i++ {
		switch v[i] {
		case '\\', '\n', '=':
			n++
		}
	}
	return n
}

// CutEscaped returns the longest prefix of v whose escaped form takes at
// most n bytes, cut on a rune boundary. That is what fits the room left in
// a frame.
func CutEscaped(v string, n int) string {
	size := 0
	for i := 0; i < len(v); i++ {
		w := 1
		switch v[i] {
		case '\\', '\n', '=':
			w = 2
		}
		if size+w > n {
			for i > 0 && !utf8.RuneStart(v[i]) {
				i--
			}
			return v[:i]
		}
		size += w
	}
	return v
}

// AppendEscaped appends v escaped as a value. It is exported for callers
// that build pre-encoded line blocks (see Builder.Raw).
func AppendEscaped(dst []byte, v string) []byte { return appendEscaped(dst, v) }

// unescapeInto appends the unescaped form of raw (which must be a valid
// escaped value) to dst.
func unescapeInto(dst, raw []byte) []byte {
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c != '\\' {
			dst = append(dst, c)
			continue
		}
		i++
		switch raw[i] {
		case '\\':
			dst = append(dst, '\\')
		case 'n':
			dst = append(dst, '\n')
		case 'e':
			dst = append(dst, '=')
		}
	}
	return dst
}

// Unescape reverses AppendEscaped, for callers that read pre-encoded line
// blocks. Bytes of a lone or unknown escape are kept as they are.
func Unescape(v string) string {
	i := 0
	for i < len(v) && v[i] != '\\' {
		i++
	}
	if i == len(v) {
		return v
	}
	dst := []byte(v[:i])
	for ; i < len(v); i++ {
		c := v[i]
		if c != '\\' || i+1 == len(v) {
			dst = append(dst, c)
			continue
		}
		switch v[i+1] {
		case '\\':
			dst = append(dst, '\\')
		case 'n':
			dst = append(dst, '\n')
		case 'e':
			dst = append(dst, '=')
		default:
			dst = append(dst, c)
			continue
		}
		i++
	}
	return string(dst)
}
