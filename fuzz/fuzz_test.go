package fuzz

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"runtime"
	"slices"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/wire"
)

// decoded is the outcome of decoding a stream with the slice Decoder: the
// messages (owned copies) up to the first error, the error, and the bytes
// left over (a partial frame) when there was none.
type decoded struct {
	msgs []*wire.Message
	err  error
	rest int
}

// decodeStream decodes every frame of buf in one go.
func decodeStream(tb testing.TB, d *wire.Decoder, buf []byte) decoded {
	tb.Helper()
	var out decoded
	for off := 0; ; {
		m, n, err := d.Decode(buf[off:])
		if err != nil {
			require.Nil(tb, m)
			require.Zero(tb, n)
			out.err = err
			return out
		}
		if m == nil {
			require.Zero(tb, n)
			out.rest = len(buf) - off
			return out
		}
		out.msgs = append(out.msgs, m.Clone())
		off += n
	}
}

// requireCodecError checks that err is one of the two decode errors, with
// its fields in range for a payload of the given length.
func requireCodecError(tb testing.TB, err error, payloadLen int) {
	tb.Helper()
	var me *wire.MalformedError
	var fe *wire.FrameTooLargeError
	switch {
	case errors.As(err, &me):
		require.ErrorIs(tb, err, wire.ErrMalformed)
		require.GreaterOrEqual(tb, me.Offset, 0)
		require.LessOrEqual(tb, me.Offset, payloadLen)
		require.NotEmpty(tb, me.Reason)
	case errors.As(err, &fe):
		require.ErrorIs(tb, err, wire.ErrFrameTooLarge)
		require.Greater(tb, int64(fe.Size), int64(fe.Max))
	default:
		require.Failf(tb, "unexpected error type", "%T: %v", err, err)
	}
}

// typeFirst returns the fields in the order an encoder writes them.
func typeFirst(fields []wire.Field) []wire.Field {
	out := make([]wire.Field, 0, len(fields))
	for _, f := range fields {
		if f.Key == "type" {
			out = append(out, f)
		}
	}
	for _, f := range fields {
		if f.Key != "type" {
			out = append(out, f)
		}
	}
	return out
}

func FuzzDecode(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		d := wire.NewDecoder(wire.DefaultMaxFrame)
		m, n, err := d.Decode(data)
		if len(data) < wire.HeaderLen {
			require.NoError(t, err)
			require.Nil(t, m, "a partial header needs more")
			return
		}
		size := int64(binary.BigEndian.Uint32(data))
		if err != nil {
			require.Nil(t, m)
			require.Zero(t, n)
			requireCodecError(t, err, int(min(size, int64(len(data)))))
			if errors.Is(err, wire.ErrFrameTooLarge) {
				require.Greater(t, size, int64(wire.DefaultMaxFrame))
				return
			}
		}
		if size > wire.DefaultMaxFrame {
			require.ErrorIs(t, err, wire.ErrFrameTooLarge, "judged from the header alone")
			return
		}
		if int64(len(data)) < wire.HeaderLen+size {
			require.NoError(t, err)
			require.Nil(t, m, "a partial frame needs more")
			return
		}
		payload := data[wire.HeaderLen : wire.HeaderLen+size]

		// The reference decoder reads the spec literally.
		want, ok := referenceDecode(payload)
		if !ok {
			require.ErrorIs(t, err, wire.ErrMalformed, "the reference rejects %q", payload)
			return
		}
		require.NoError(t, err, "the reference accepts %q", payload)
		require.NotNil(t, m)
		require.Equal(t, int(wire.HeaderLen+size), n, "consumed exactly header+length")
		require.Equal(t, want, m.Fields)

		// decode(encode(m)) == m; a canonical payload re-encodes to itself.
		owned := m.Clone()
		enc, err := wire.AppendFrame(nil, owned)
		require.NoError(t, err, "a decoded message must encode")
		require.LessOrEqual(t, len(enc), n, "re-encoding never grows a frame")
		m2, n2, err := wire.NewDecoder(0).Decode(enc)
		require.NoError(t, err)
		require.Equal(t, len(enc), n2)
		require.Equal(t, typeFirst(want), m2.Fields)
		if bytes.HasPrefix(payload, []byte("type=")) && payload[len(payload)-1] != '\n' {
			require.Equal(t, data[:n], enc, "canonical payloads re-encode byte for byte")
		}
	})
}

// FuzzDecodeSplit feeds a stream to one Decoder in two pieces, the way a
// server appends each read to what it kept, and expects what one piece gives.
func FuzzDecodeSplit(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte, split uint) {
		whole := decodeStream(t, wire.NewDecoder(0), data)
		cut := int(split % uint(len(data)+1))

		d := wire.NewDecoder(0)
		pending := slices.Clone(data[:cut])
		first := decodeStream(t, d, pending)
		got := first
		if first.err == nil {
			pending = append(pending[len(pending)-first.rest:], data[cut:]...)
			second := decodeStream(t, d, pending)
			got = decoded{msgs: append(first.msgs, second.msgs...), err: second.err, rest: second.rest}
		}
		require.Equal(t, len(whole.msgs), len(got.msgs))
		for i := range whole.msgs {
			require.Equal(t, whole.msgs[i], got.msgs[i], "message %d", i)
		}
		require.Equal(t, whole.err, got.err)
		require.Equal(t, whole.rest, got.rest)
	})
}

// chunkReader returns data in chunks whose sizes cycle through sizes.
type chunkReader struct {
	data  []byte
	sizes []byte
	i     int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := len(c.data)
	if len(c.sizes) > 0 {
		n = int(c.sizes[c.i%len(c.sizes)]) + 1
		c.i++
	}
	n = copy(p, c.data[:min(n, len(c.data))])
	c.data = c.data[n:]
	return n, nil
}

// checksum is an FNV-1a hash of a message's keys and values, computed
// without allocating.
func checksum(m *wire.Message) uint64 {
	h := uint64(14695981039346656037)
	add := func(s string) {
		for i := 0; i < len(s); i++ {
			h = (h ^ uint64(s[i])) * 1099511628211
		}
		h = (h ^ 0x100) * 1099511628211 // separator
	}
	for _, f := range m.Fields {
		add(f.Key)
		add(f.Value)
	}
	return h
}

// FuzzReader reads the input with wire.Reader in fuzzed chunk sizes.
func FuzzReader(f *testing.F) {
	f.Fuzz(func(t *testing.T, data, chunks []byte) {
		want := decodeStream(t, wire.NewDecoder(0), data)

		// Borrowed messages, with the memory bound: a Reader grows its
		// buffer with the bytes that arrive, never to an announced length.
		// Nothing else allocates while it is measured.
		sums := make([]uint64, 0, len(data)/9+1) // a frame is at least 9 bytes
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		r := wire.NewReader(&chunkReader{data: data, sizes: chunks}, 0)
		var err error
		for {
			var m *wire.Message
			if m, err = r.Next(); err != nil {
				break
			}
			sums = append(sums, checksum(m))
		}
		runtime.ReadMemStats(&after)
		limit := 4*uint64(len(data)) + 256<<10
		require.LessOrEqual(t, after.TotalAlloc-before.TotalAlloc, limit,
			"bytes allocated to read %d input bytes", len(data))

		require.Equal(t, len(want.msgs), len(sums))
		for i, m := range want.msgs {
			require.Equal(t, checksum(m), sums[i], "message %d", i)
		}
		switch {
		case want.err != nil:
			require.Equal(t, want.err, err)
		case want.rest > 0:
			require.Equal(t, io.ErrUnexpectedEOF, err)
		default:
			require.Equal(t, io.EOF, err)
		}

		// Owned messages: the same, and they stay intact.
		r = wire.NewReader(&chunkReader{data: data, sizes: chunks}, 0)
		var owned []*wire.Message
		for {
			m, err := r.ReadMessage()
			if err != nil {
				break
			}
			owned = append(owned, m)
		}
		require.Equal(t, want.msgs, owned)
	})
}

// FuzzRoundTrip builds a message from a type and fields separated by 0xff
// bytes (key, value, key, value, ...), which can never occur in UTF-8.
func FuzzRoundTrip(f *testing.F) {
	f.Fuzz(func(t *testing.T, typ string, kv []byte) {
		m := wire.NewMessage(wire.Kind(typ))
		parts := bytes.Split(kv, []byte{0xff})
		for i := 0; i+1 < len(parts); i += 2 {
			m.Fields = append(m.Fields, wire.Field{Key: string(parts[i]), Value: string(parts[i+1])})
		}
		valid := len(m.Fields) <= wire.MaxKeys
		seen := map[string]bool{}
		for _, fl := range m.Fields {
			valid = valid && wire.ValidKey(fl.Key) && utf8.ValidString(fl.Value) && !seen[fl.Key]
			seen[fl.Key] = true
		}

		dst := []byte("prefix")
		enc, err := wire.AppendFrame(dst, m)
		if !valid {
			require.Error(t, err, "AppendFrame must refuse %q", m.Fields)
			require.Equal(t, "prefix", string(enc))
			return
		}
		require.NoError(t, err)
		frame := enc[len(dst):]
		got, n, err := wire.NewDecoder(0).Decode(frame)
		if len(frame)-wire.HeaderLen > wire.DefaultMaxFrame {
			require.ErrorIs(t, err, wire.ErrFrameTooLarge)
			return
		}
		require.NoError(t, err)
		require.Equal(t, len(frame), n)
		require.Equal(t, m.Fields, got.Fields, "decode(encode(m)) == m")
		assert.Equal(t, m.String(), string(frame[wire.HeaderLen:]))

		// The Builder writes the same bytes.
		b := wire.Begin(nil, wire.Kind(typ))
		for _, fl := range m.Fields[1:] {
			b.Str(fl.Key, fl.Value)
		}
		built, err := b.Finish()
		require.NoError(t, err)
		require.Equal(t, frame, built)
	})
}
