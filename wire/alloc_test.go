package wire_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/wire"
)

// Allocation regressions: the slice codec is the event-loop server's hot
// path and must not allocate in the steady state.

func skipIfRace(tb testing.TB) {
	tb.Helper()
	if raceEnabled {
		tb.Skip("allocation counts are not meaningful under the race detector")
	}
}

func TestDecoder_Decode_allocs(t *testing.T) {
	skipIfRace(t)
	tests := []struct {
		name string
		buf  []byte
	}{
		{"task, no escapes", mustEncode(t, taskMessage())},
		{"result with 20 out keys", mustEncode(t, resultMessage(20))},
		{"escaped values", mustEncode(t, msg("type", "result", "error", "a=b\nc\\d", "out.x", "=="))},
		{"1024 keys", frame(manyKeys(1024))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var d wire.Decoder
			_, _, err := d.Decode(tt.buf) // warm-up: the decoder sizes its buffers
			require.NoError(t, err)
			allocs := testing.AllocsPerRun(100, func() {
				m, _, err := d.Decode(tt.buf)
				if err != nil || m == nil {
					panic(err)
				}
			})
			assert.Zero(t, allocs)
		})
	}
}

func TestAppendFrame_allocs(t *testing.T) {
	skipIfRace(t)
	for _, m := range []*wire.Message{taskMessage(), resultMessage(20), msg("type", "t", "error", "a=b\nc\\d")} {
		t.Run(m.Type(), func(t *testing.T) {
			buf := make([]byte, 0, 4096)
			allocs := testing.AllocsPerRun(100, func() {
				var err error
				if buf, err = wire.AppendFrame(buf[:0], m); err != nil {
					panic(err)
				}
			})
			assert.Zero(t, allocs)
		})
	}
}

func TestBuilder_allocs(t *testing.T) {
	skipIfRace(t)
	buf := make([]byte, 0, 4096)
	allocs := testing.AllocsPerRun(100, func() {
		b := wire.Begin(buf[:0], "task")
		b.Uint("task_id", 1048576)
		b.Uint("version", 3)
		b.Str("task_type", "image.resize")
		b.Int("delta", -5)
		b.Bool("wait", true)
		b.List("running", []string{"1.0", "2.3"})
		b.PrefixStr(wire.PrefixArg, "src", "a=b")
		b.RawString("out.a=1", 1)
		var err error
		if buf, err = b.Finish(); err != nil {
			panic(err)
		}
	})
	assert.Zero(t, allocs)
}

func TestReader_Next_allocs(t *testing.T) {
	skipIfRace(t)
	one := mustEncode(t, taskMessage())
	stream := bytes.Repeat(one, 2000)
	r := wire.NewReader(bytes.NewReader(stream), 0)
	_, err := r.Next()
	require.NoError(t, err)
	allocs := testing.AllocsPerRun(1000, func() {
		if _, err := r.Next(); err != nil {
			panic(err)
		}
	})
	assert.Zero(t, allocs)
}

func TestWriter_Write_allocs(t *testing.T) {
	skipIfRace(t)
	w := wire.NewWriter(&bytes.Buffer{}, 0)
	m := taskMessage()
	require.NoError(t, w.Send(m)) // warm-up: the writer sizes its buffer
	allocs := testing.AllocsPerRun(100, func() {
		if err := w.Write(m); err != nil {
			panic(err)
		}
		if err := w.Flush(); err != nil {
			panic(err)
		}
	})
	assert.LessOrEqual(t, allocs, 0.1) // bytes.Buffer may grow now and then
}
