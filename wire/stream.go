package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// readChunk is the Reader's initial buffer and minimum read size.
const readChunk = 64 << 10

// Reader reads frames from a stream with the limits of the slice Decoder.
// It grows its buffer only as payload bytes arrive, never to a length a
// header merely announces. A Reader is not safe for concurrent use.
type Reader struct {
	r          io.Reader
	dec        Decoder
	buf        []byte
	start, end int
	err        error // sticky: returned by every later call
	readErr    error // from r, held back until the bytes read with it are used
}

// maxEmptyReads is how many reads in a row may return no data and no error
// before Next gives up with io.ErrNoProgress (as bufio does).
const maxEmptyReads = 100

// NewReader returns a Reader with the given payload limit (0: default).
func NewReader(r io.Reader, maxFrame int) *Reader {
	return &Reader{r: r, dec: Decoder{MaxFrame: maxFrame}, buf: make([]byte, readChunk)}
}

// SetMaxFrame changes the payload limit, for example to the main control's
// announced max_frame.
func (r *Reader) SetMaxFrame(n int) { r.dec.MaxFrame = n }

// Next returns the next message. The message and its strings are valid only
// until the next call to Next or ReadMessage. Errors are *FrameTooLargeError,
// *MalformedError, or the underlying reader's. Those are io.EOF at a frame
// boundary and io.ErrUnexpectedEOF inside a frame.
func (r *Reader) Next() (*Message, error) {
	for {
		if r.end > r.start {
			m, n, err := r.dec.Decode(r.buf[r.start:r.end])
			if err != nil {
				r.err = err
				return nil, err
			}
			if m != nil {
				r.start += n
				return m, nil
			}
		}
		if r.err != nil {
			return nil, r.err
		}
		if err := r.fill(); err != nil {
			if errors.Is(err, io.EOF) && r.end > r.start {
				err = io.ErrUnexpectedEOF
			}
			r.err = err
			return nil, err
		}
	}
}

// ReadMessage returns the next message as a copy that owns its memory.
func (r *Reader) ReadMessage() (*Message, error) {
	m, err := r.Next()
	if err != nil {
		return nil, err
	}
	return m.Clone(), nil
}

// fill reads more bytes, making room first. It compacts consumed bytes away.
// It grows the buffer only when a frame already fills it, doubling it up to
// the frame being read.
func (r *Reader) fill() error {
	if r.readErr != nil {
		return r.readErr
	}
	if r.start > 0 && (r.start == r.end || len(r.buf)-r.end < readChunk/4) {
		r.end = copy(r.buf, r.buf[r.start:r.end])
		r.start = 0
	}
	if r.end == len(r.buf) {
		need := len(r.buf) * 2
		if r.end-r.start >= HeaderLen {
			frame := HeaderLen + int(binary.BigEndian.Uint32(r.buf[r.start:]))
			need = min(need, frame)
		}
		nb := make([]byte, max(need, len(r.buf)+1))
		r.end = copy(nb, r.buf[r.start:r.end])
		r.start = 0
		r.buf = nb
	}
	for range maxEmptyReads {
		n, err := r.r.Read(r.buf[r.end:])
		if n < 0 || n > len(r.buf)-r.end {
			return errors.New("wire: reader returned an invalid count")
		}
		r.end += n
		if err != nil {
			// A reader may return data and an error together. Use the data
			// first, and report the error when more is needed.
			r.readErr = err
		}
		if n > 0 {
			return nil
		}
		if err != nil {
			return err
		}
	}
	return io.ErrNoProgress
}

// Writer writes frames to a stream. Frames are buffered until Flush. Send
// writes and flushes one message. A Writer is not safe for concurrent use.
type Writer struct {
	w   io.Writer
	max int
	buf []byte
}

// NewWriter returns a Writer that refuses payloads over maxFrame (0:
// default).
func NewWriter(w io.Writer, maxFrame int) *Writer {
	if maxFrame <= 0 {
		maxFrame = DefaultMaxFrame
	}
	return &Writer{w: w, max: maxFrame}
}

// SetMaxFrame changes the payload limit, for example to the main control's
// announced max_frame.
func (w *Writer) SetMaxFrame(n int) {
	if n > 0 {
		w.max = n
	}
}

// Write encodes m into the buffer. A payload over the limit is refused
// with a *FrameTooLargeError and nothing is buffered.
func (w *Writer) Write(m *Message) error {
	start := len(w.buf)
	buf, err := AppendFrame(w.buf, m)
	if err != nil {
		return err
	}
	return w.admit(buf, start)
}

// WriteFrame buffers a frame already encoded with Builder or AppendFrame.
func (w *Writer) WriteFrame(frame []byte) error {
	if len(frame) < HeaderLen || int(binary.BigEndian.Uint32(frame)) != len(frame)-HeaderLen {
		return fmt.Errorf("%w: not one whole frame", ErrMalformed)
	}
	start := len(w.buf)
	return w.admit(append(w.buf, frame...), start)
}

func (w *Writer) admit(buf []byte, start int) error {
	if size := len(buf) - start - HeaderLen; size > w.max {
		w.buf = buf[:start]
		return &FrameTooLargeError{Size: uint32(size), Max: w.max}
	}
	w.buf = buf
	return nil
}

// Buffered returns the number of bytes waiting for Flush.
func (w *Writer) Buffered() int { return len(w.buf) }

// Flush writes the buffered frames.
func (w *Writer) Flush() error {
	if len(w.buf) == 0 {
		return nil
	}
	_, err := w.w.Write(w.buf)
	w.buf = w.buf[:0]
	return err
}

// Send writes m and flushes.
func (w *Writer) Send(m *Message) error {
	if err := w.Write(m); err != nil {
		return err
	}
	return w.Flush()
}
