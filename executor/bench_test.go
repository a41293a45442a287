package executor_test

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/executor"
	"github.com/apollo11/apollo11/wire"
)

// BenchmarkExecutor_Echo measures the cost per `echo` task over loopback
// TCP: from the fake main control writing `task` to it reading `started`
// and `result` (and writing `result_ack`). window is how many tasks the
// fake keeps in flight (the executor has as many slots): window=1 is
// latency, dominated by loopback round trips; a larger window is
// throughput. The fake batches its writes like a real event loop would. ns/op
// is per task and includes the fake's own work; cpu-ns/op is the CPU time
// of the whole test binary per task, which stays meaningful on a busy
// machine.
//
// With conn=pipe the executor talks to the fake through net.Pipe (see
// Config.Dial) instead of a socket: no syscalls, so ns/op is close to the
// executor's own overhead (plus the fake's and the pipe's goroutine
// hand-offs).
func BenchmarkExecutor_Echo(b *testing.B) {
	for _, conn := range []string{"tcp", "pipe"} {
		for _, window := range []int{1, 16, 256} {
			b.Run(fmt.Sprintf("conn=%s/window=%d", conn, window), func(b *testing.B) {
				benchEcho(b, conn == "pipe", window)
			})
		}
	}
}

func benchEcho(b *testing.B, pipe bool, window int) {
	f := mustStartFakeMain(b)
	cfg := executor.Config{Slots: window, Logger: slog.New(slog.DiscardHandler),
		Handlers: map[string]executor.Handler{"echo": echoHandler()}}
	if pipe {
		cfg.Dial = f.pipeDial
	}
	mustRun(b, f, cfg)
	c := f.accept(b)
	c.registerQuiet()
	require.NoError(b, c.Net.SetDeadline(time.Now().Add(10*time.Minute)))
	b.ReportAllocs()
	b.ResetTimer()
	cpu := cpuTime(b)
	blast(b, c, window, b.N)
	b.StopTimer()
	reportCPU(b, cpu)
}

// blast sends n echo tasks keeping window in flight, acks every result and
// returns when all n results arrived. A writer goroutine sends one batch
// (acks and new tasks) per wake-up.
func blast(b *testing.B, c *fakeConn, window, n int) {
	acks := make(chan [2]string, window) // strings cloned: the Reader reuses its buffer
	writeErr := make(chan error, 1)
	go func() {
		var buf []byte
		next := uint64(1)
		task := func() {
			t := wire.Begin(buf, "task")
			t.Uint("task_id", next)
			t.Uint("version", 1)
			t.Str("task_type", "echo")
			t.Uint("attempt", 1)
			t.Uint("max_attempts", 3)
			t.Uint("timeout_ms", 0)
			t.Str("trace_id", "bench")
			t.Uint("state_version", 0)
			t.Str("arg.greeting", "hello")
			buf, _ = t.Finish()
			next++
		}
		for range min(window, n) {
			task()
		}
		for {
			if _, err := c.Net.Write(buf); err != nil {
				writeErr <- err
				return
			}
			buf = buf[:0]
			ack, ok := <-acks
			for ok {
				a := wire.Begin(buf, "result_ack")
				a.Str("task_id", ack[0])
				a.Str("version", ack[1])
				a.Bool("accepted", true)
				buf, _ = a.Finish()
				if next <= uint64(n) {
					task()
				}
				select {
				case ack, ok = <-acks:
				default:
					ok = false
				}
			}
			if len(buf) == 0 {
				writeErr <- nil
				return
			}
		}
	}()
	for done := 0; done < n; {
		m, err := c.R.Next()
		if err != nil {
			b.Fatal(err)
		}
		if m.Type() != "result" {
			continue
		}
		if m.Value("status") != "succeeded" {
			b.Fatalf("result %s", m)
		}
		done++
		acks <- [2]string{strings.Clone(m.Value("task_id")), strings.Clone(m.Value("version"))}
	}
	close(acks)
	require.NoError(b, <-writeErr)
}
