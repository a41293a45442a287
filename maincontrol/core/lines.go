package core

import "github.com/apollo11/apollo11/wire"

// encodePrefixed copies the lines of m whose keys start with prefix (arg.,
// out.), escaped and joined by LF, into one string that frames later embed
// as is with Builder.RawString.
func encodePrefixed(m *wire.Message, prefix string) (string, uint16) {
	size, n := 0, 0
	for k, v := range m.WithPrefix(prefix) {
		size += len(prefix) + len(k) + 2 + wire.EscapedLen(v)
		n++
	}
	if n == 0 {
		return "", 0
	}
	buf := make([]byte, 0, size)
	for k, v := range m.WithPrefix(prefix) {
		if len(buf) > 0 {
			buf = append(buf, '\n')
		}
		buf = append(buf, prefix...)
		buf = append(buf, k...)
		buf = append(buf, '=')
		buf = wire.AppendEscaped(buf, v)
	}
	return string(buf), uint16(n)
}
