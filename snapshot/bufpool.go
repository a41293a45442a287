package snapshot

import (
	"bufio"
	"io"
	"sync"
)

// Write buffers are reused across snapshots. Under load a snapshot is due
// as soon as one ends, and a fresh 64 KiB buffer for each part and
// manifest was about 5% of the snapshot's CPU (zeroing, page faults, the
// collector).
var (
	smallWriters = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, partBufSize) }}
	bigWriters   = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, snapBufSize) }}
)

// getWriter returns a write buffer of size partBufSize or snapBufSize onto dst.
func getWriter(dst io.Writer, size int) *bufio.Writer {
	p := &bigWriters
	if size <= partBufSize {
		p = &smallWriters
	}
	w := p.Get().(*bufio.Writer)
	w.Reset(dst)
	return w
}

// putWriter returns w to its pool. It drops what w still holds, so the
// pool keeps no reference to a file or its bytes.
func putWriter(w *bufio.Writer) {
	if w == nil {
		return
	}
	w.Reset(nil)
	if w.Size() <= partBufSize {
		smallWriters.Put(w)
	} else {
		bigWriters.Put(w)
	}
}
