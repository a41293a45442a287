package wire

import (
	"encoding/binary"
	"math/bits"
	"unicode/utf8"
	"unsafe"
)

// HeaderLen is the size of the frame length prefix.
const HeaderLen = 4

// scratchKeep is the largest unescape buffer a Decoder keeps between
// payloads. A bigger one is dropped, so one huge frame does not pin memory.
const scratchKeep = 64 << 10

// Decoder parses frames out of a caller's buffer. The zero value is ready
// with the default 1 MiB limit. A Decoder is not safe for concurrent use.
//
// The returned *Message is owned by the Decoder and valid until the next
// call. Its strings borrow from the input buffer, or from the decoder for
// values that held escapes. Callers copy what they keep.
type Decoder struct {
	// MaxFrame is the largest payload accepted. 0 means DefaultMaxFrame.
	MaxFrame int

	msg     Message
	scratch []byte
	keys    keySet
}

// NewDecoder returns a decoder with the given payload limit, or the
// default for 0.
func NewDecoder(maxFrame int) *Decoder { return &Decoder{MaxFrame: maxFrame} }

func (d *Decoder) max() int {
	if d.MaxFrame <= 0 {
		return DefaultMaxFrame
	}
	return d.MaxFrame
}

// Decode parses the first frame at the start of buf. It returns:
//   - (nil, 0, nil) when buf holds only part of a frame, so read more.
//   - (nil, 0, *FrameTooLargeError) once a header announces more than
//     MaxFrame, before any of the payload is needed.
//   - (nil, 0, *MalformedError) for a payload that breaks spec section 2.
//   - (msg, n, nil) with n the bytes consumed, header and payload.
func (d *Decoder) Decode(buf []byte) (*Message, int, error) {
	size, ok, err := d.Header(buf)
	if !ok || err != nil {
		return nil, 0, err
	}
	if len(buf) < HeaderLen+size {
		return nil, 0, nil
	}
	m, err := d.DecodePayload(buf[HeaderLen : HeaderLen+size])
	if err != nil {
		return nil, 0, err
	}
	return m, HeaderLen + size, nil
}

// Header reads a frame header. ok is false while buf holds fewer than 4
// bytes. A zero length is malformed. A length over MaxFrame is a
// *FrameTooLargeError.
func (d *Decoder) Header(buf []byte) (size int, ok bool, err error) {
	if len(buf) < HeaderLen {
		return 0, false, nil
	}
	n := binary.BigEndian.Uint32(buf)
	if n == 0 {
		return 0, true, malformed("zero-length frame", 0)
	}
	if uint64(n) > uint64(d.max()) {
		return 0, true, &FrameTooLargeError{Size: n, Max: d.max()}
	}
	return int(n), true, nil
}

// DecodePayload parses one payload (without its header). The same borrowing
// rules as Decode apply.
func (d *Decoder) DecodePayload(p []byte) (*Message, error) {
	m := &d.msg
	m.Fields = m.Fields[:0]
	if len(p) == 0 {
		return nil, malformed("empty payload", 0)
	}
	if !utf8.Valid(p) {
		return nil, malformed("invalid UTF-8", firstInvalidUTF8(p))
	}
	if p[len(p)-1] == '\n' {
		p = p[:len(p)-1] // one trailing LF is allowed and ignored
	}
	if cap(d.scratch) > scratchKeep {
		d.scratch = nil
	}
	d.scratch = d.scratch[:0]
	hasType := false
	d.keys.reset()
	fields := m.Fields[:0]
	for off := 0; off <= len(p); {
		// The key runs up to the first '='. A LF before it means a line
		// without one. Keys are short, so a byte loop beats word tricks here.
		eq := off
		for eq < len(p) && keyByte[p[eq]] {
			eq++
		}
		if eq == len(p) || p[eq] != '=' {
			return nil, d.lineProblem(p, off, eq)
		}
		if reason := keyShapeProblem(p[off:eq]); reason != "" {
			return nil, malformed(reason, off)
		}
		// The value runs up to LF or the end, and escapes are checked on
		// the way. The scan goes a word at a time, written out because this
		// is the server's hot loop. The byte loop after it finishes the
		// payload's last few bytes. It does nothing when the word loop
		// stopped at a special byte.
		escaped := false
		end := eq + 1
		for {
			for end+8 <= len(p) {
				if ms := specialMask(le64(p, end)); ms != 0 {
					end += bits.TrailingZeros64(ms) >> 3
					break
				}
				end += 8
			}
			for end < len(p) && !specialByte[p[end]] {
				end++
			}
			if end == len(p) || p[end] == '\n' {
				break
			}
			if p[end] == '=' {
				return nil, malformed("raw '=' in value", end)
			}
			escaped = true
			if end+1 >= len(p) {
				return nil, malformed("lone '\\' at end of value", end)
			}
			switch p[end+1] {
			case '\\', 'n', 'e':
				end += 2
			default:
				return nil, malformed("unknown escape sequence in value", end)
			}
		}
		if len(fields) == MaxKeys {
			return nil, malformed("more than 1024 keys", off)
		}
		k := borrow(p[off:eq])
		if len(fields) < smallNKeys {
			fp := keyFingerprint(k)
			word, bit := fp>>6&3, uint64(1)<<(fp&63)
			if d.keys.seen[word]&bit != 0 && hasKey(fields, k) {
				return nil, malformed("duplicate key", off)
			}
			d.keys.seen[word] |= bit
		} else if d.keys.repeated(fields, k) {
			return nil, malformed("duplicate key", off)
		}
		raw := p[eq+1 : end]
		var val string
		if escaped {
			val = d.unescape(raw, len(p))
		} else {
			val = borrow(raw)
		}
		fields = append(fields, Field{Key: k, Value: val})
		if k == "type" {
			hasType = true
		}
		off = end + 1
	}
	m.Fields = fields
	if !hasType {
		return nil, malformed("missing type", 0)
	}
	return m, nil
}

// lineProblem explains why the line at off has no valid key before '='.
// stop is where the key scan stopped.
func (d *Decoder) lineProblem(p []byte, off, stop int) error {
	switch {
	case stop == off && (off == len(p) || p[off] == '\n'):
		return malformed("empty line", off)
	case stop == len(p) || p[stop] == '\n':
		return malformed("line without '='", off)
	}
	// A byte outside the key alphabet is a bad key when '=' follows on
	// the line. Otherwise the line has no '=' at all.
	for i := stop; i < len(p) && p[i] != '\n'; i++ {
		if p[i] == '=' {
			return malformed("key byte not in a-z 0-9 _ . -", stop)
		}
	}
	return malformed("line without '='", off)
}

// unescape appends the unescaped raw value to the scratch buffer and returns
// it. The buffer is sized for the whole payload up front so that appending
// never moves values already returned.
func (d *Decoder) unescape(raw []byte, payloadLen int) string {
	if cap(d.scratch) < payloadLen {
		d.scratch = make([]byte, 0, payloadLen)
	}
	start := len(d.scratch)
	d.scratch = unescapeInto(d.scratch, raw)
	return borrow(d.scratch[start:])
}

// keyShapeProblem checks the length and bare prefixes of a key. Its bytes
// are already known to be in the alphabet.
func keyShapeProblem(k []byte) string {
	if len(k) == 0 {
		return "empty key"
	}
	if len(k) > MaxKeyLen {
		return "key longer than 64 bytes"
	}
	if k[len(k)-1] == '.' { // only a key ending in '.' can be a bare prefix
		switch string(k) {
		case PrefixArg, PrefixOut, PrefixState, PrefixStateSet, PrefixStateAdd:
			return "key is a bare prefix"
		}
	}
	return ""
}

// borrow views b as a string without copying. The caller must not modify b
// while the string is in use.
func borrow(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(unsafe.SliceData(b), len(b))
}

func firstInvalidUTF8(p []byte) int {
	for i := 0; i < len(p); {
		r, size := utf8.DecodeRune(p[i:])
		if r == utf8.RuneError && size <= 1 {
			return i
		}
		i += size
	}
	return len(p)
}
