package snapshot

import (
	"bufio"
	"io"
	"sync"
)

// Write buffers are reused across snapshots. Under load a snapshot is due
// as soon as one ends, and a fresh 64 KiB buffer for each part and
// manifest costs zeroing, page faults and the collector's work.
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

// putWriter returns w to its pool. It drops w's reference to its file;
// the buffer's old bytes stay in memory until the next use overwrites
// them, which is within this process only.
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
