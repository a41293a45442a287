package wire_test

import (
	"bytes"
	"io"
	"strconv"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/wire"
)

// splitStream is a few frames of different shapes, small enough to try every
// split point.
func splitStream(tb testing.TB) ([]byte, []*wire.Message) {
	tb.Helper()
	want := []*wire.Message{
		taskMessage(),
		msg("type", "pong", "seq", "1"),
		msg("type", "result", "task_id", "1", "version", "1", "status", "failed", "error", "a=b\nc\\d"),
		resultMessage(20),
		mustDecodePayload(tb, manyKeys(40)),
		msg("type", "bye"),
	}
	var buf []byte
	for _, m := range want {
		buf = append(buf, mustEncode(tb, m)...)
	}
	buf = append(buf, frame("type=heartbeat\nseq=2\nrunning=\n")...)
	want = append(want, msg("type", "heartbeat", "seq", "2", "running", ""))
	return buf, want
}

// feed passes chunks to one Decoder the way a server accumulates reads:
// decode every whole frame, keep the rest, append the next chunk.
func feed(tb testing.TB, chunks ...[]byte) []*wire.Message {
	tb.Helper()
	var d wire.Decoder
	var pending []byte
	var msgs []*wire.Message
	for _, c := range chunks {
		pending = append(pending, c...)
		got, n := decodeAll(tb, &d, pending)
		msgs = append(msgs, got...)
		pending = append(pending[:0], pending[n:]...)
	}
	require.Empty(tb, pending, "bytes left over")
	return msgs
}

func TestDecoder_Decode_everySplit(t *testing.T) {
	stream, want := splitStream(t)
	require.Equal(t, want, feed(t, stream), "whole")

	t.Run("two pieces", func(t *testing.T) {
		for i := 0; i <= len(stream); i++ {
			got := feed(t, stream[:i], stream[i:])
			if !assert.Equal(t, want, got, "split at %d", i) {
				return
			}
		}
	})
	t.Run("three pieces", func(t *testing.T) {
		for i := 0; i <= len(stream); i += 7 {
			for j := i; j <= len(stream); j += 13 {
				got := feed(t, stream[:i], stream[i:j], stream[j:])
				if !assert.Equal(t, want, got, "split at %d and %d", i, j) {
					return
				}
			}
		}
	})
	t.Run("byte at a time", func(t *testing.T) {
		chunks := make([][]byte, len(stream))
		for i := range stream {
			chunks[i] = stream[i : i+1]
		}
		assert.Equal(t, want, feed(t, chunks...))
	})
}

func TestReader_Next_everySplit(t *testing.T) {
	stream, want := splitStream(t)
	for i := 1; i < len(stream); i++ {
		r := wire.NewReader(&chunkReader{data: stream, sizes: []int{i, len(stream)}}, 0)
		got, err := readAll(t, r)
		require.ErrorIs(t, err, io.EOF, "split at %d", i)
		if !assert.Equal(t, want, got, "split at %d", i) {
			return
		}
	}
	for _, size := range []int{1, 2, 3, 5, 8, 13, 64, 1000} {
		t.Run("chunks of "+strconv.Itoa(size), func(t *testing.T) {
			got, err := readAll(t, wire.NewReader(&chunkReader{data: stream, sizes: []int{size}}, 0))
			assert.ErrorIs(t, err, io.EOF)
			assert.Equal(t, want, got)
		})
	}
	t.Run("OneByteReader", func(t *testing.T) {
		got, err := readAll(t, wire.NewReader(iotest.OneByteReader(bytes.NewReader(stream)), 0))
		assert.ErrorIs(t, err, io.EOF)
		assert.Equal(t, want, got)
	})
}
