package core

import (
	"strings"
	"unsafe"

	"github.com/apollo11/apollo11/wire"
)

// lines tallies a message's lines under one prefix (arg., out.) while the
// message is scanned once for its other keys. So size checks and the copy
// need no further passes to find them.
type lines struct {
	size int // bytes of the lines escaped and joined by LF, plus one LF
	n    int
	// first and last are the indexes of the first and last such field,
	// so the copy skips the message's other keys. escapes says whether
	// any value needs escaping, so the copy can skip looking.
	first, last int
	escapes     bool
}

// add tallies field i of the message, f.
func (l *lines) add(i int, f *wire.Field) {
	n := lineLen(f)
	if n != len(f.Key)+2+len(f.Value) {
		l.escapes = true
	}
	if l.n == 0 {
		l.first = i
	}
	l.last = i
	l.size += n
	l.n++
}

// lineLen is the bytes f takes in a frame, with LF, key, '=' and value.
func lineLen(f *wire.Field) int { return len(f.Key) + 2 + wire.EscapedLen(f.Value) }

// encodePrefixed copies the lines of m whose keys start with prefix,
// escaped and joined by LF, into one string that frames later embed as is
// with Builder.RawString. l is their tally.
func encodePrefixed(m *wire.Message, prefix string, l lines) (string, uint16) {
	if l.n == 0 {
		return "", 0
	}
	buf := make([]byte, 0, l.size)
	for i := l.first; i <= l.last; i++ {
		f := &m.Fields[i]
		if i != l.first && i != l.last && !strings.HasPrefix(f.Key, prefix) {
			continue
		}
		if len(buf) > 0 {
			buf = append(buf, '\n')
		}
		buf = append(buf, f.Key...)
		buf = append(buf, '=')
		if l.escapes {
			buf = wire.AppendEscaped(buf, f.Value)
		} else {
			buf = append(buf, f.Value...)
		}
	}
	// buf is never written again, so the string may own it.
	return unsafe.String(unsafe.SliceData(buf), len(buf)), uint16(l.n)
}
