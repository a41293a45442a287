package wire_test

import (
	"bytes"
	"io"
	"testing"

	"github.com/apollo11/apollo11/wire"
)

// benchMessages are the messages every codec benchmark runs on.
var benchMessages = []struct {
	name string
	msg  *wire.Message
}{
	{"task", taskMessage()},
	{"result20", resultMessage(20)},
}

func BenchmarkDecode(b *testing.B) {
	for _, bm := range benchMessages {
		b.Run(bm.name, func(b *testing.B) {
			buf := mustEncode(b, bm.msg)
			var d wire.Decoder
			b.SetBytes(int64(len(buf)))
			b.ReportAllocs()
			for b.Loop() {
				m, n, err := d.Decode(buf)
				if err != nil || m == nil || n != len(buf) {
					b.Fatalf("Decode = %v, %d, %v", m, n, err)
				}
			}
		})
	}
}

func BenchmarkEncode(b *testing.B) {
	for _, bm := range benchMessages {
		b.Run(bm.name, func(b *testing.B) {
			buf := make([]byte, 0, 4096)
			b.SetBytes(int64(len(mustEncode(b, bm.msg))))
			b.ReportAllocs()
			for b.Loop() {
				var err error
				buf, err = wire.AppendFrame(buf[:0], bm.msg)
				if err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(bm.name+"/builder", func(b *testing.B) {
			buf := make([]byte, 0, 4096)
			m := bm.msg
			b.SetBytes(int64(len(mustEncode(b, m))))
			b.ReportAllocs()
			for b.Loop() {
				bl := wire.Begin(buf[:0], wire.Kind(m.Fields[0].Value))
				for _, f := range m.Fields[1:] {
					bl.Str(f.Key, f.Value)
				}
				var err error
				buf, err = bl.Finish()
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("task/builder-typed", func(b *testing.B) {
		// The way the main control builds a task: typed numbers, arg.*
		// through PrefixStr.
		buf := make([]byte, 0, 4096)
		b.ReportAllocs()
		for b.Loop() {
			bl := wire.Begin(buf[:0], "task")
			bl.Uint("task_id", 1048576)
			bl.Uint("version", 3)
			bl.Str("task_type", "image.resize")
			bl.Uint("attempt", 1)
			bl.Uint("max_attempts", 3)
			bl.Uint("timeout_ms", 30000)
			bl.Str("trace_id", "4bf92f3577b34da6a3ce929d0e0e4736")
			bl.Uint("state_version", 98765)
			bl.PrefixStr(wire.PrefixArg, "src", "s3://photos/2024/06/IMG_0042.jpg")
			bl.PrefixStr(wire.PrefixArg, "width", "1024")
			var err error
			buf, err = bl.Finish()
			if err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkEncode_TaskKeys builds a task frame the way the main control's
// core does: pre-validated keys and the args as one pre-encoded block.
func BenchmarkEncode_TaskKeys(b *testing.B) {
	var (
		kTaskID, kVersion, kTaskType = wire.MustKey("task_id"), wire.MustKey("version"), wire.MustKey("task_type")
		kAttempt, kMaxAttempts       = wire.MustKey("attempt"), wire.MustKey("max_attempts")
		kTimeoutMs, kTraceID         = wire.MustKey("timeout_ms"), wire.MustKey("trace_id")
		kStateVersion                = wire.MustKey("state_version")
	)
	buf := make([]byte, 0, 4096)
	b.ReportAllocs()
	for b.Loop() {
		bl := wire.Begin(buf[:0], "task")
		bl.UintK(kTaskID, 1048576)
		bl.UintK(kVersion, 3)
		bl.StrK(kTaskType, "image.resize")
		bl.UintK(kAttempt, 1)
		bl.UintK(kMaxAttempts, 3)
		bl.UintK(kTimeoutMs, 30000)
		bl.StrK(kTraceID, "4bf92f3577b34da6a3ce929d0e0e4736")
		bl.UintK(kStateVersion, 98765)
		bl.RawString("arg.src=s3://photos/2024/06/IMG_0042.jpg\narg.width=1024", 2)
		var err error
		buf, err = bl.Finish()
		if err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkReader(b *testing.B) {
	const frames = 4096
	one := mustEncode(b, taskMessage())
	stream := bytes.Repeat(one, frames)
	run := func(b *testing.B, read func(*wire.Reader) (*wire.Message, error)) {
		b.SetBytes(int64(len(stream)))
		b.ReportAllocs()
		rd := bytes.NewReader(stream)
		for b.Loop() {
			rd.Reset(stream)
			r := wire.NewReader(rd, 0)
			for range frames {
				if _, err := read(r); err != nil {
					b.Fatal(err)
				}
			}
			if _, err := read(r); err != io.EOF {
				b.Fatalf("after the last frame: %v, want io.EOF", err)
			}
		}
	}
	b.Run("Next", func(b *testing.B) { run(b, (*wire.Reader).Next) })
	b.Run("ReadMessage", func(b *testing.B) { run(b, (*wire.Reader).ReadMessage) })
}
