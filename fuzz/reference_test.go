package fuzz

import (
	"strings"
	"unicode/utf8"

	"github.com/apollo11/apollo11/wire"
)

// referenceDecode is spec section 2 read literally, with no attention to
// speed: the oracle the fuzz targets hold the real decoder to. It reports
// the fields of a valid payload, or ok=false for a malformed one.
func referenceDecode(payload []byte) (fields []wire.Field, ok bool) {
	if len(payload) == 0 || !utf8.Valid(payload) {
		return nil, false
	}
	p := string(payload)
	p = strings.TrimSuffix(p, "\n") // one trailing LF is allowed
	lines := strings.Split(p, "\n")
	if len(lines) > wire.MaxKeys {
		return nil, false
	}
	seen := make(map[string]bool)
	for _, line := range lines {
		key, raw, found := strings.Cut(line, "=") // split at the first '='
		if !found || !referenceKey(key) || seen[key] {
			return nil, false
		}
		seen[key] = true
		value, ok := referenceUnescape(raw)
		if !ok {
			return nil, false
		}
		fields = append(fields, wire.Field{Key: key, Value: value})
	}
	if !seen["type"] {
		return nil, false
	}
	return fields, true
}

// referenceKey: 1 to 64 bytes of a-z 0-9 _ . -, and not a bare prefix.
func referenceKey(k string) bool {
	if len(k) < 1 || len(k) > 64 {
		return false
	}
	for _, c := range []byte(k) {
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_' || c == '.' || c == '-') {
			return false
		}
	}
	switch k {
	case "arg.", "out.", "state.", "state.set.", "state.add.":
		return false
	}
	return true
}

// referenceUnescape: \\ is a backslash, \n a LF, \e an '='; a raw '=', a lone
// '\' and any other escape are malformed (a raw LF cannot occur in a line).
func referenceUnescape(raw string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(raw); i++ {
		switch c := raw[i]; c {
		case '=':
			return "", false
		case '\\':
			if i+1 == len(raw) {
				return "", false
			}
			i++
			switch raw[i] {
			case '\\':
				b.WriteByte('\\')
			case 'n':
				b.WriteByte('\n')
			case 'e':
				b.WriteByte('=')
			default:
				return "", false
			}
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), true
}
