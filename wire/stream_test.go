package wire_test

import (
	"bytes"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/wire"
)

// readSizeProbe records the largest buffer a Reader offers to Read and the
// bytes delivered before each call.
type readSizeProbe struct {
	r         io.Reader
	delivered int
	violation string
	bound     func(delivered, offered int) bool
}

func (p *readSizeProbe) Read(b []byte) (int, error) {
	if p.bound != nil && !p.bound(p.delivered, len(b)) && p.violation == "" {
		p.violation = "offered a " + strconv.Itoa(len(b)) + "-byte buffer after " + strconv.Itoa(p.delivered) + " bytes"
	}
	n, err := p.r.Read(b)
	p.delivered += n
	return n, err
}

// testStream is a stream of frames of every shape: escapes, a trailing
// LF, many keys, a frame over the Reader's initial 64 KiB buffer.
func testStream(tb testing.TB) ([]byte, []*wire.Message) {
	tb.Helper()
	want := []*wire.Message{
		taskMessage(),
		msg("type", "pong", "seq", "1"),
		msg("type", "result", "task_id", "1", "version", "1", "status", "failed", "error", "a=b\nc\\d"),
		resultMessage(20),
		mustDecodePayload(tb, manyKeys(300)),
		msg("type", "big", "blob", strings.Repeat("0123456789abcdef", 5000)), // 80 KB
		msg("type", "bye"),
	}
	var buf []byte
	for _, m := range want {
		buf = append(buf, mustEncode(tb, m)...)
	}
	// A payload with one trailing LF decodes as the same message without it.
	buf = append(buf, frame("type=heartbeat\nseq=2\nrunning=1.0\n")...)
	want = append(want, msg("type", "heartbeat", "seq", "2", "running", "1.0"))
	return buf, want
}

func TestReader_Next(t *testing.T) {
	stream, want := testStream(t)
	readers := []struct {
		name string
		r    func() io.Reader
	}{
		{"whole", func() io.Reader { return bytes.NewReader(stream) }},
		{"one byte at a time", func() io.Reader { return iotest.OneByteReader(bytes.NewReader(stream)) }},
		{"half reads", func() io.Reader { return iotest.HalfReader(bytes.NewReader(stream)) }},
		{"EOF with the last data", func() io.Reader { return iotest.DataErrReader(bytes.NewReader(stream)) }},
		{"chunks of 3", func() io.Reader { return &chunkReader{data: stream, sizes: []int{3}} }},
		{"chunks of 4097", func() io.Reader { return &chunkReader{data: stream, sizes: []int{4097}} }},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 5 {
		sizes := make([]int, 50)
		for j := range sizes {
			sizes[j] = 1 + rng.IntN(1<<(1+rng.IntN(17)))
		}
		readers = append(readers, struct {
			name string
			r    func() io.Reader
		}{"random chunks " + strconv.Itoa(i), func() io.Reader { return &chunkReader{data: stream, sizes: sizes} }})
	}
	for _, rd := range readers {
		t.Run(rd.name, func(t *testing.T) {
			r := wire.NewReader(rd.r(), 0)
			got, err := readAll(t, r)
			assert.Equal(t, io.EOF, err, "a stream that ends at a frame boundary ends with io.EOF")
			require.Equal(t, len(want), len(got))
			for i := range want {
				assert.Equal(t, want[i], got[i], "message %d", i)
			}
			_, err = r.Next()
			assert.Equal(t, io.EOF, err, "io.EOF again")
		})
	}
}

func TestReader_largeFrame(t *testing.T) {
	// A payload of exactly the default maximum, 1 MiB: 16 times the
	// Reader's initial buffer.
	head := "type=t\nblob="
	payload := head + strings.Repeat("x", wire.DefaultMaxFrame-len(head))
	stream := append(frame(payload), mustEncode(t, msg("type", "after"))...)

	for _, oneByte := range []bool{false, true} {
		name := map[bool]string{false: "whole", true: "one byte at a time"}[oneByte]
		t.Run(name, func(t *testing.T) {
			var src io.Reader = bytes.NewReader(stream)
			if oneByte {
				src = iotest.OneByteReader(src)
			}
			// The buffer grows with the bytes received: whatever it offers
			// to Read is at most the initial 64 KiB or what already arrived.
			probe := &readSizeProbe{r: src, bound: func(delivered, offered int) bool {
				return offered <= max(64<<10, delivered)
			}}
			r := wire.NewReader(probe, 0)
			m, err := r.Next()
			require.NoError(t, err)
			assert.Len(t, m.Value("blob"), wire.DefaultMaxFrame-len(head))
			m, err = r.Next()
			require.NoError(t, err)
			assert.Equal(t, "after", m.Type())
			_, err = r.Next()
			assert.Equal(t, io.EOF, err)
			assert.Empty(t, probe.violation)
		})
	}
}

func TestReader_frameTooLarge(t *testing.T) {
	t.Run("from the header alone", func(t *testing.T) {
		// Only the header: the Reader must not wait for the payload.
		r := wire.NewReader(bytes.NewReader(header(1<<20+1)), 0)
		_, err := r.Next()
		var fe *wire.FrameTooLargeError
		require.ErrorAs(t, err, &fe)
		assert.Equal(t, uint32(1<<20+1), fe.Size)
		assert.Equal(t, wire.DefaultMaxFrame, fe.Max)
		_, err = r.Next()
		assert.ErrorIs(t, err, wire.ErrFrameTooLarge, "the error sticks")
	})
	t.Run("after good frames", func(t *testing.T) {
		stream := append(mustEncode(t, msg("type", "a")), header(101)...)
		r := wire.NewReader(bytes.NewReader(stream), 100)
		m, err := r.Next()
		require.NoError(t, err)
		assert.Equal(t, "a", m.Type())
		_, err = r.Next()
		assert.ErrorIs(t, err, wire.ErrFrameTooLarge)
	})
	t.Run("SetMaxFrame", func(t *testing.T) {
		stream := append(mustEncode(t, msg("type", "a", "v", "0123456789")), mustEncode(t, msg("type", "a", "v", "0123456789"))...)
		r := wire.NewReader(bytes.NewReader(stream), 0)
		_, err := r.Next()
		require.NoError(t, err)
		r.SetMaxFrame(10)
		_, err = r.Next()
		assert.ErrorIs(t, err, wire.ErrFrameTooLarge)
	})
}

// TestReader_announcedLength: a header announcing a big frame whose bytes
// never come must not make the Reader allocate the announced size.
func TestReader_announcedLength(t *testing.T) {
	const announced = 1<<20 - 1 // within the 1 MiB limit
	stream := append(header(announced), "type=t\nab="...)
	require.Len(t, stream, 4+10)

	probe := &readSizeProbe{r: bytes.NewReader(stream), bound: func(_, offered int) bool {
		return offered <= 64<<10
	}}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	r := wire.NewReader(probe, 1<<20)
	_, err := r.Next()
	runtime.ReadMemStats(&after)

	assert.Equal(t, io.ErrUnexpectedEOF, err, "EOF inside a frame")
	assert.Empty(t, probe.violation, "the read buffer never grew past its initial size")
	allocated := after.TotalAlloc - before.TotalAlloc
	assert.Less(t, allocated, uint64(announced/4), "allocated %d bytes for a 14-byte stream", allocated)
}

func TestReader_eof(t *testing.T) {
	good := mustEncode(t, msg("type", "a"))
	tests := []struct {
		name    string
		stream  []byte
		msgs    int
		wantErr error
	}{
		{"empty stream", nil, 0, io.EOF},
		{"at a boundary", good, 1, io.EOF},
		{"inside a header", append(good, 0, 0), 1, io.ErrUnexpectedEOF},
		{"after a header", append(good, header(5)...), 1, io.ErrUnexpectedEOF},
		{"inside a payload", append(good, frame("type=b")[:7]...), 1, io.ErrUnexpectedEOF},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, oneByte := range []bool{false, true} {
				var src io.Reader = bytes.NewReader(tt.stream)
				if oneByte {
					src = iotest.OneByteReader(src)
				}
				got, err := readAll(t, wire.NewReader(src, 0))
				assert.Len(t, got, tt.msgs)
				assert.Equal(t, tt.wantErr, err)
			}
		})
	}
}

func TestReader_malformed(t *testing.T) {
	stream := append(mustEncode(t, msg("type", "a")), frame("type=b\nBad=1")...)
	stream = append(stream, mustEncode(t, msg("type", "c"))...)
	r := wire.NewReader(bytes.NewReader(stream), 0)
	got, err := readAll(t, r)
	assert.Len(t, got, 1)
	requireMalformed(t, err, 7)
	_, err = r.Next()
	assert.ErrorIs(t, err, wire.ErrMalformed, "framing cannot be trusted after a malformed frame")
}

func TestReader_readErrors(t *testing.T) {
	boom := errors.New("boom")
	good := mustEncode(t, msg("type", "a"))
	t.Run("error after data", func(t *testing.T) {
		r := wire.NewReader(io.MultiReader(bytes.NewReader(good), iotest.ErrReader(boom)), 0)
		got, err := readAll(t, r)
		assert.Len(t, got, 1)
		assert.ErrorIs(t, err, boom)
	})
	t.Run("error returned with the last data", func(t *testing.T) {
		// io.Reader may return n > 0 and an error together; the data is
		// delivered, then the error.
		r := wire.NewReader(&dataThenError{data: good, err: boom}, 0)
		got, err := readAll(t, r)
		assert.Len(t, got, 1)
		assert.ErrorIs(t, err, boom)
	})
	t.Run("empty reads are retried", func(t *testing.T) {
		r := wire.NewReader(&emptyReads{r: bytes.NewReader(good), n: 3}, 0)
		got, err := readAll(t, r)
		assert.Len(t, got, 1)
		assert.Equal(t, io.EOF, err)
	})
	t.Run("a reader that never progresses", func(t *testing.T) {
		r := wire.NewReader(&emptyReads{r: bytes.NewReader(good), n: math32}, 0)
		_, err := r.Next()
		assert.ErrorIs(t, err, io.ErrNoProgress)
	})
}

const math32 = math.MaxInt32 // far more empty reads than any reader tries (fits a 32-bit int)

// dataThenError returns all its data together with err, then (0, nil)
// forever: the error is only ever reported once.
type dataThenError struct {
	data []byte
	err  error
	done bool
}

func (d *dataThenError) Read(p []byte) (int, error) {
	if d.done {
		return 0, nil
	}
	d.done = true
	return copy(p, d.data), d.err
}

// emptyReads returns (0, nil) n times before each real read.
type emptyReads struct {
	r     io.Reader
	n, at int
}

func (e *emptyReads) Read(p []byte) (int, error) {
	if e.at < e.n {
		e.at++
		return 0, nil
	}
	e.at = 0
	return e.r.Read(p)
}

func TestReader_ReadMessage(t *testing.T) {
	stream, want := testStream(t)
	r := wire.NewReader(iotest.HalfReader(bytes.NewReader(stream)), 0)
	var got []*wire.Message
	for range want {
		m, err := r.ReadMessage()
		require.NoError(t, err)
		got = append(got, m)
	}
	// Owned copies stay intact while the Reader reuses its buffer.
	assert.Equal(t, want, got)
}

func TestWriter_Send(t *testing.T) {
	var out bytes.Buffer
	w := wire.NewWriter(&out, 0)
	require.NoError(t, w.Send(msg("a", "1", "type", "t")))
	assert.Equal(t, string(frame("type=t\na=1")), out.String(), "Send flushes")
	assert.Zero(t, w.Buffered())
}

func TestWriter_Write(t *testing.T) {
	var out bytes.Buffer
	w := wire.NewWriter(&out, 0)
	require.NoError(t, w.Write(msg("type", "a")))
	require.NoError(t, w.Write(msg("type", "b")))
	assert.Zero(t, out.Len(), "Write only buffers")
	assert.Equal(t, 2*len(frame("type=a")), w.Buffered())
	require.NoError(t, w.Flush())
	assert.Equal(t, string(frame("type=a"))+string(frame("type=b")), out.String())
	assert.Zero(t, w.Buffered())
	require.NoError(t, w.Flush(), "flushing nothing")
}

func TestWriter_limit(t *testing.T) {
	atLimit := msg("type", "t", "v", strings.Repeat("x", 16-len("type=t\nv=")))
	overLimit := msg("type", "t", "v", strings.Repeat("x", 17-len("type=t\nv=")))
	tests := []struct {
		name  string
		write func(w *wire.Writer) error
	}{
		{"Write", func(w *wire.Writer) error { return w.Write(overLimit) }},
		{"Send", func(w *wire.Writer) error { return w.Send(overLimit) }},
		{"WriteFrame", func(w *wire.Writer) error { return w.WriteFrame(mustEncode(t, overLimit)) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			w := wire.NewWriter(&out, 16)
			require.NoError(t, w.Write(atLimit))
			buffered := w.Buffered()

			err := tt.write(w)
			var fe *wire.FrameTooLargeError
			require.ErrorAs(t, err, &fe)
			assert.Equal(t, uint32(17), fe.Size)
			assert.Equal(t, 16, fe.Max)
			assert.Equal(t, buffered, w.Buffered(), "the refused frame buffers nothing")

			require.NoError(t, w.Flush())
			assert.Equal(t, string(mustEncode(t, atLimit)), out.String())
		})
	}
	t.Run("SetMaxFrame", func(t *testing.T) {
		w := wire.NewWriter(io.Discard, 0)
		w.SetMaxFrame(16)
		assert.ErrorIs(t, w.Write(overLimit), wire.ErrFrameTooLarge)
		w.SetMaxFrame(0) // ignored
		assert.ErrorIs(t, w.Write(overLimit), wire.ErrFrameTooLarge)
		w.SetMaxFrame(17)
		assert.NoError(t, w.Write(overLimit))
	})
	t.Run("default 1 MiB", func(t *testing.T) {
		w := wire.NewWriter(io.Discard, 0)
		head := "type=t\nv="
		assert.NoError(t, w.Write(msg("type", "t", "v", strings.Repeat("x", wire.DefaultMaxFrame-len(head)))))
		assert.ErrorIs(t, w.Write(msg("type", "t", "v", strings.Repeat("x", wire.DefaultMaxFrame-len(head)+1))), wire.ErrFrameTooLarge)
	})
}

func TestWriter_WriteFrame(t *testing.T) {
	good := mustEncode(t, msg("type", "a"))
	tests := []struct {
		name  string
		frame []byte
		ok    bool
	}{
		{"whole frame", good, true},
		{"short header", good[:3], false},
		{"truncated payload", good[:len(good)-1], false},
		{"two frames", append(append([]byte{}, good...), good...), false},
		{"nothing", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			w := wire.NewWriter(&out, 0)
			err := w.WriteFrame(tt.frame)
			if !tt.ok {
				assert.ErrorIs(t, err, wire.ErrMalformed)
				assert.Zero(t, w.Buffered())
				return
			}
			require.NoError(t, err)
			require.NoError(t, w.Flush())
			assert.Equal(t, good, out.Bytes())
		})
	}
}

func TestWriter_errors(t *testing.T) {
	t.Run("invalid message buffers nothing", func(t *testing.T) {
		w := wire.NewWriter(io.Discard, 0)
		assert.ErrorIs(t, w.Write(msg("type", "t", "Bad", "1")), wire.ErrKey)
		assert.ErrorIs(t, w.Send(msg("a", "1")), wire.ErrKey)
		assert.Zero(t, w.Buffered())
	})
	t.Run("write error", func(t *testing.T) {
		boom := errors.New("boom")
		w := wire.NewWriter(failingWriter{boom}, 0)
		assert.ErrorIs(t, w.Send(msg("type", "t")), boom)
	})
}

type failingWriter struct{ err error }

func (f failingWriter) Write([]byte) (int, error) { return 0, f.err }

// TestWriter_toReader: what a Writer writes, a Reader reads back.
func TestWriter_toReader(t *testing.T) {
	_, want := testStream(t)
	pr, pw := io.Pipe()
	go func() {
		w := wire.NewWriter(pw, 0)
		for _, m := range want {
			if err := w.Write(m); err != nil {
				pw.CloseWithError(err)
				return
			}
		}
		pw.CloseWithError(w.Flush())
	}()
	got, err := readAll(t, wire.NewReader(pr, 0))
	assert.Equal(t, io.EOF, err)
	assert.Equal(t, want, got)
}
