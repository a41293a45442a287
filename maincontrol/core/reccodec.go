package core

// The varint and length-prefixed primitives that records are written and
// read with (see records.go for the rules of the format).

import (
	"encoding/binary"
	"unsafe"
)

type enc struct{ b []byte }

func (e *enc) u(v uint64)   { e.b = binary.AppendUvarint(e.b, v) }
func (e *enc) i(v int64)    { e.b = binary.AppendVarint(e.b, v) }
func (e *enc) s(v string)   { e.u(uint64(len(v))); e.b = append(e.b, v...) }
func (e *enc) byte(v uint8) { e.b = append(e.b, v) }
func (e *enc) ids(v []uint64) {
	e.u(uint64(len(v)))
	for _, x := range v {
		e.u(x)
	}
}

// dec reads a record. The first failure sticks and every later read
// returns zero values, so decodeRecord checks once at the end.
type dec struct {
	b   []byte
	err error
	// names, when set, interns the strings name reads. The records of
	// a restart then share one copy of each task type and executor id.
	// Its blocks also hold the other strings of those records.
	names *interner
}

// interner hands out one string for each name it has seen. It copies
// other strings into shared blocks: one allocation for many strings.
type interner struct {
	last  string // the name asked for last: most records repeat it
	m     map[string]string
	block []byte // the block that strings are copied into now
}

// strBlock is the size of a block of strings. A block lives while any of
// its strings does. So a restart's memory stays bounded by what it loaded.
const strBlock = 16 << 10

// copy returns b as a string in the current block. A long one gets an
// allocation of its own, so that a block wastes little at its end.
func (in *interner) copy(b []byte) string {
	if len(b) == 0 || len(b) > strBlock/8 {
		return string(b)
	}
	if len(in.block)+len(b) > cap(in.block) {
		in.block = make([]byte, 0, strBlock)
	}
	// The bytes are never written again: later strings go after them.
	in.block = append(in.block, b...)
	return unsafe.String(&in.block[len(in.block)-len(b)], len(b))
}

// maxInterned bounds the names an interner keeps. Past it, they are
// copied one by one as plain strings are.
const maxInterned = 1 << 12

func (in *interner) get(b []byte) string {
	if in.last == string(b) {
		return in.last
	}
	v, ok := in.m[string(b)]
	if !ok {
		v = string(b)
		if in.m == nil {
			in.m = map[string]string{}
		}
		if len(in.m) < maxInterned {
			in.m[v] = v
		}
	}
	in.last = v
	return v
}

func (d *dec) fail() {
	if d.err == nil {
		d.err = ErrCorrupt
	}
	d.b = nil
}

func (d *dec) u() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *dec) u32() uint32 {
	v := d.u()
	if v > 1<<32-1 {
		d.fail()
	}
	return uint32(v)
}

func (d *dec) u16() uint16 {
	v := d.u()
	if v > 1<<16-1 {
		d.fail()
	}
	return uint16(v)
}

func (d *dec) i() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *dec) byte() uint8 {
	if len(d.b) < 1 {
		d.fail()
		return 0
	}
	v := d.b[0]
	d.b = d.b[1:]
	return v
}

func (d *dec) s() string {
	n := d.u()
	if n > uint64(len(d.b)) {
		d.fail()
		return ""
	}
	var v string
	if d.names != nil {
		v = d.names.copy(d.b[:n])
	} else {
		v = string(d.b[:n])
	}
	d.b = d.b[n:]
	return v
}

// name reads a string that many records repeat (a task type, an
// executor id), interned when the decoder has names.
func (d *dec) name() string {
	if d.names == nil {
		return d.s()
	}
	n := d.u()
	if n > uint64(len(d.b)) {
		d.fail()
		return ""
	}
	v := d.names.get(d.b[:n])
	d.b = d.b[n:]
	return v
}

func (d *dec) ids(dst []uint64) []uint64 {
	n := d.u()
	if n > uint64(len(d.b)) { // each id takes at least one byte
		d.fail()
		return dst
	}
	for ; n > 0; n-- {
		dst = append(dst, d.u())
	}
	return dst
}

// more reports whether bytes follow the fields read so far. Only then is
// an optional trailing field present.
func (d *dec) more() bool { return d.err == nil && len(d.b) > 0 }

// optU reads an optional trailing number, 0 when the record ends here.
func (d *dec) optU() uint64 {
	if !d.more() {
		return 0
	}
	return d.u()
}

// optU32 reads an optional trailing 32-bit number, 0 when the record
// ends here.
func (d *dec) optU32() uint32 {
	if !d.more() {
		return 0
	}
	return d.u32()
}

// optI reads an optional trailing signed number, 0 when the record ends.
func (d *dec) optI() int64 {
	if !d.more() {
		return 0
	}
	return d.i()
}

// optS reads an optional trailing string, "" when the record ends here.
func (d *dec) optS() string {
	if !d.more() {
		return ""
	}
	return d.s()
}

// prio reads a priority, 0 to 9, since it indexes the queues.
func (d *dec) prio() uint8 {
	p := d.byte()
	if p > 9 {
		d.fail()
	}
	return p
}

// bool reads a flag byte, 0 or 1.
func (d *dec) bool() bool {
	b := d.byte()
	if b > 1 {
		d.fail()
	}
	return b == 1
}

func boolByte(b bool) uint8 {
	if b {
		return 1
	}
	return 0
}

func (d *dec) state() State {
	s := State(d.byte())
	if s == 0 || s > NumStates {
		d.fail()
	}
	return s
}
