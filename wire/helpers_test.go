package wire_test

import (
	"encoding/binary"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/wire"
)

// frame returns payload with its 4-byte big-endian length header.
func frame(payload string) []byte {
	b := make([]byte, wire.HeaderLen, wire.HeaderLen+len(payload))
	binary.BigEndian.PutUint32(b, uint32(len(payload)))
	return append(b, payload...)
}

// header returns a bare 4-byte header announcing n payload bytes.
func header(n uint32) []byte {
	return binary.BigEndian.AppendUint32(nil, n)
}

// msg builds a message from alternating keys and values, in order.
func msg(kv ...string) *wire.Message {
	if len(kv)%2 != 0 {
		panic("msg: odd number of arguments")
	}
	m := &wire.Message{}
	for i := 0; i < len(kv); i += 2 {
		m.Fields = append(m.Fields, wire.Field{Key: kv[i], Value: kv[i+1]})
	}
	return m
}

// lines joins payload lines with LF.
func lines(l ...string) string { return strings.Join(l, "\n") }

// manyKeys returns a payload of `type=t` plus n-1 keys k0001=v ...
func manyKeys(n int) string {
	var sb strings.Builder
	sb.WriteString("type=t")
	for i := 1; i < n; i++ {
		fmt.Fprintf(&sb, "\nk%04d=v", i)
	}
	return sb.String()
}

// mustEncode encodes m as a frame and fails the test on error.
func mustEncode(tb testing.TB, m *wire.Message) []byte {
	tb.Helper()
	b, err := wire.AppendFrame(nil, m)
	require.NoError(tb, err, "encode %v", m)
	return b
}

// mustDecodePayload decodes one payload and returns an owned copy.
func mustDecodePayload(tb testing.TB, payload string) *wire.Message {
	tb.Helper()
	var d wire.Decoder
	m, err := d.DecodePayload([]byte(payload))
	require.NoError(tb, err, "decode %q", payload)
	require.NotNil(tb, m)
	return m.Clone()
}

// decodeAll decodes every whole frame in buf with d, returning owned copies
// and the number of bytes consumed.
func decodeAll(tb testing.TB, d *wire.Decoder, buf []byte) ([]*wire.Message, int) {
	tb.Helper()
	var out []*wire.Message
	off := 0
	for {
		m, n, err := d.Decode(buf[off:])
		require.NoError(tb, err)
		if m == nil {
			require.Zero(tb, n, "need-more must consume nothing")
			return out, off
		}
		out = append(out, m.Clone())
		off += n
	}
}

// taskMessage is a realistic `task` (spec section 4): the nine keys of
// a task and two arg.* keys, no escapes, about 200 bytes of payload.
func taskMessage() *wire.Message {
	return msg(
		"type", "task",
		"task_id", "1048576",
		"version", "3",
		"task_type", "image.resize",
		"attempt", "1",
		"max_attempts", "3",
		"timeout_ms", "30000",
		"trace_id", "4bf92f3577b34da6a3ce929d0e0e4736",
		"state_version", "98765",
		"arg.src", "s3://photos/2024/06/IMG_0042.jpg",
		"arg.width", "1024",
	)
}

// resultMessage is a succeeded `result` with n out.* keys.
func resultMessage(n int) *wire.Message {
	m := msg(
		"type", "result",
		"task_id", "1048576",
		"version", "3",
		"status", "succeeded",
	)
	for i := range n {
		m.Fields = append(m.Fields, wire.Field{
			Key:   fmt.Sprintf("out.metric_%02d", i),
			Value: fmt.Sprintf("%d.%03d", 1000+i*37, i*7),
		})
	}
	return m
}

// readAll reads messages (owned copies) until an error and returns both.
func readAll(tb testing.TB, r *wire.Reader) ([]*wire.Message, error) {
	tb.Helper()
	var out []*wire.Message
	for {
		m, err := r.ReadMessage()
		if err != nil {
			return out, err
		}
		out = append(out, m)
	}
}

// chunkReader returns the stream in chunks of the given sizes, cycling.
type chunkReader struct {
	data  []byte
	sizes []int
	i     int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := min(c.sizes[c.i%len(c.sizes)], len(p), len(c.data))
	c.i++
	copy(p, c.data[:n])
	c.data = c.data[n:]
	return n, nil
}
