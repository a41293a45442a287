package bench

import (
	"encoding/binary"
	"errors"
)

// errorHead is how an error reply's payload starts when it has more keys than type.
// Every error of the main control has a code. Encoders write type first.
const errorHead = "type=error\n"

// errZeroLength is a frame header announcing no payload, which wire-v1 calls malformed.
// After it the stream's framing cannot be trusted.
var errZeroLength = errors.New("frame of length 0 from the main control")

// frameCounter counts the frames of a byte stream, and the error replies among them.
// It does not decode them. The flooders' readers use it.
// Under a flood the harness shares the machine with the main control it loads.
// Decoding every reply would take CPU the main control then lacks.
// It is resumable. Bytes may arrive split anywhere, a header included.
// Nothing is buffered beyond a header and the first bytes of a payload.
type frameCounter struct {
	hdr  [4]byte
	nhdr int // header bytes of the current frame seen so far
	left int // its payload bytes not yet seen (once nhdr is 4)
	size int // its payload's length
	head [len(errorHead)]byte
	nhd  int // its first payload bytes kept in head

	frames, errors int64
}

// feed consumes p. It fails only on a frame of length 0.
func (c *frameCounter) feed(p []byte) error {
	for len(p) > 0 {
		if c.nhdr < len(c.hdr) {
			k := copy(c.hdr[c.nhdr:], p)
			c.nhdr += k
			p = p[k:]
			if c.nhdr < len(c.hdr) {
				return nil
			}
			c.size = int(binary.BigEndian.Uint32(c.hdr[:]))
			c.left = c.size
			if c.left == 0 {
				return errZeroLength
			}
			c.nhd = 0
		}
		k := min(c.left, len(p))
		c.nhd += copy(c.head[c.nhd:], p[:k])
		c.left -= k
		p = p[k:]
		if c.left == 0 {
			c.frames++
			if c.isError() {
				c.errors++
			}
			c.nhdr = 0
		}
	}
	return nil
}

// isError reports whether the frame just completed is an error reply.
func (c *frameCounter) isError() bool {
	if c.size == len(errorHead)-1 { // "type=error" and nothing else
		return string(c.head[:c.nhd]) == errorHead[:c.size]
	}
	return c.nhd == len(errorHead) && string(c.head[:]) == errorHead
}
