package executor

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apollo11/apollo11/wire"
)

// sinkConn is a net.Conn whose writes count `result` frames; reads block
// until Close.
type sinkConn struct {
	net.Conn // nil: only the methods below are called
	mu       sync.Mutex
	results  int
	want     int
	reached  chan struct{}
	closed   chan struct{}
	once     sync.Once
}

func (c *sinkConn) Write(b []byte) (int, error) {
	n := 0
	for off := 0; off+wire.HeaderLen <= len(b); {
		size := int(binary.BigEndian.Uint32(b[off:]))
		if bytes.HasPrefix(b[off+wire.HeaderLen:], []byte("type=result\n")) {
			n++
		}
		off += wire.HeaderLen + size
	}
	c.mu.Lock()
	c.results += n
	if c.want > 0 && c.results >= c.want {
		c.want = 0
		close(c.reached)
	}
	c.mu.Unlock()
	return len(b), nil
}

// expect arms the counter: reached closes when total results reach n.
func (c *sinkConn) expect(n int) <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reached = make(chan struct{})
	if c.results >= n {
		close(c.reached)
	} else {
		c.want = n
	}
	return c.reached
}

func (c *sinkConn) SetWriteDeadline(time.Time) error { return nil }
func (c *sinkConn) Close() error                     { c.once.Do(func() { close(c.closed) }); return nil }

// BenchmarkExecutor_TaskPath measures the executor alone, without any I/O:
// from a `task` frame's bytes (decoded here, as the session's reader would)
// to `started` and `result` having been written to the connection, for an
// echo handler. batch is how many tasks are handed over before waiting for
// their results. ns/op is per task; cpu-ns/op is the process's CPU time per
// task (it includes encoding and decoding the task frames here).
func BenchmarkExecutor_TaskPath(b *testing.B) {
	for _, batch := range []int{1, 64} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			echo := HandlerFunc(func(_ context.Context, t *Task) (Result, error) {
				return Result{Out: t.Args}, nil
			})
			e, err := New(Config{ID: "bench", Slots: MaxSlots, Logger: slog.New(slog.DiscardHandler),
				Handlers: map[string]Handler{"echo": echo}})
			if err != nil {
				b.Fatal(err)
			}
			defer e.Stop()
			conn := &sinkConn{closed: make(chan struct{})}
			s := &session{e: e, out: newOutbox(conn, time.Minute, 0), log: e.log, maxFrame: wire.DefaultMaxFrame,
				done: make(chan struct{}), byeAck: make(chan struct{}), waiters: map[string]chan *wire.Message{}}
			defer s.out.close()
			e.activate(s)

			frames := make([][]byte, batch)
			var dec wire.Decoder
			b.ReportAllocs()
			b.ResetTimer()
			var ru syscall.Rusage
			_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
			cpu := ru.Utime.Nano() + ru.Stime.Nano()
			for sent := 0; sent < b.N; {
				n := min(batch, b.N-sent)
				for i := range n {
					tb := wire.Begin(frames[i][:0], "task")
					tb.Uint("task_id", uint64(sent+i+1))
					tb.Uint("version", 1)
					tb.Str("task_type", "echo")
					tb.Uint("attempt", 1)
					tb.Uint("max_attempts", 3)
					tb.Uint("timeout_ms", 0)
					tb.Str("trace_id", "bench")
					tb.Uint("state_version", 0)
					tb.Str("arg.greeting", "hello")
					frames[i], _ = tb.Finish()
				}
				reached := conn.expect(sent + n)
				for i := range n {
					m, _, err := dec.Decode(frames[i])
					if err != nil {
						b.Fatal(err)
					}
					e.handleFrame(s, m)
				}
				<-reached
				for i := range n { // acks, as the main control sends them
					ab := wire.Begin(frames[i][:0], "result_ack")
					ab.Uint("task_id", uint64(sent+i+1))
					ab.Uint("version", 1)
					ab.Bool("accepted", true)
					frames[i], _ = ab.Finish()
					m, _, _ := dec.Decode(frames[i])
					e.handleFrame(s, m)
				}
				sent += n
			}
			b.StopTimer()
			_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
			b.ReportMetric(float64(ru.Utime.Nano()+ru.Stime.Nano()-cpu)/float64(b.N), "cpu-ns/op")
		})
	}
}

func BenchmarkOutcome_Encode(b *testing.B) {
	b.ReportAllocs()
	out := map[string]string{"greeting": "hello"}
	for b.Loop() {
		o := newOutcome(token{123456, 1}, Result{Out: out}, nil)
		o.encode(1 << 20)
	}
}
