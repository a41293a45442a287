package core

import (
	"bytes"
	"time"

	"testing"

	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/wire"
)

// A fuzz program is a list of steps separated by an empty line ("\n\n",
// which no payload can hold). A step's first byte picks a connection (its
// low two bits) and an action (the rest):
//   - below fuzzTickOp: the step's other bytes are a payload that the
//     connection sends (a step that does not decode is skipped: refusing
//     it is the server's job, not the core's);
//   - fuzzTickOp to fuzzReconnectOp-1: the clock moves by one of
//     fuzzSteps and the core ticks;
//   - fuzzReconnectOp to fuzzRestartOp-1: the connection closes and a new
//     one takes its place;
//   - fuzzRestartOp and above: the main control crashes and restarts from
//     its change records, and every connection is opened again.
const (
	fuzzTickOp      = 48
	fuzzReconnectOp = 56
	fuzzRestartOp   = 62
	fuzzConns       = 4
	fuzzMaxSteps    = 300
)

// fuzzSteps are the clock steps: around each timeout of fuzzConfig and the
// retry backoff, and past the retention.
var fuzzSteps = [...]time.Duration{
	10 * time.Millisecond, 300 * time.Millisecond, time.Second, 2100 * time.Millisecond,
	5 * time.Second, 16 * time.Second, 61 * time.Second, 25 * time.Hour,
}

// fuzzConfig keeps every limit small enough for a short program to reach.
func fuzzConfig(c *Config) {
	c.MaxFrame = 2 * MinMaxFrame
	c.MaxPending = 12
	c.MaxPendingBytes = 3 * MinMaxFrame
	c.RetentionMaxBytes = 2 * MinMaxFrame
	c.RetentionMax = 6
	c.MaxRetrying = 2
	c.HandshakeTimeout = 2 * time.Second
	c.HeartbeatTimeout = 6 * time.Second
	c.StartTimeout = 2 * time.Second
}

// fuzzStep builds a step that sends the message (type first, then the
// key, value pairs) from connection conn.
func fuzzStep(conn byte, typ string, kv ...string) []byte {
	frame, err := wire.AppendFrame(nil, msg(typ, kv...))
	if err != nil {
		panic(err)
	}
	return append([]byte{conn}, frame[wire.HeaderLen:]...)
}

// fuzzProgram joins steps into a program.
func fuzzProgram(steps ...[]byte) []byte { return bytes.Join(steps, []byte("\n\n")) }

func fuzzTick(conn byte, step int) []byte { return []byte{conn | byte(fuzzTickOp+step)<<2} }

// fuzzSeeds are programs that reach every message handler with valid
// messages, so that the fuzzer's mutations start from deep paths.
func fuzzSeeds() [][]byte {
	const cl, ex, ex2 = 0, 1, 2
	hello := fuzzStep(cl, "hello", "req", "h", "client", "fuzz")
	reg := fuzzStep(ex, "register", "executor_id", "e1", "task_types", "echo,x", "slots", "2")
	reg2 := fuzzStep(ex2, "register", "executor_id", "e2", "task_types", "echo", "slots", "1")
	submit := fuzzStep(cl, "submit", "req", "s1", "task_type", "echo", "arg.msg", "a\\eb\\nc", "priority", "5",
		"max_attempts", "2", "timeout_ms", "1000", "key", "k1", "wait", "true", "trace_id", "t1")
	started := fuzzStep(ex, "started", "task_id", "1", "version", "1")
	result := fuzzStep(ex, "result", "task_id", "1", "version", "1", "status", "succeeded", "out.n", "1",
		"state.set.a", "x", "state.add.n", "-3")
	failed := fuzzStep(ex, "result", "task_id", "1", "version", "1", "status", "failed", "retryable", "true",
		"error", "boom", "state.add.n", "1")
	return [][]byte{
		fuzzProgram(hello, reg, submit, started, result,
			fuzzStep(cl, "query", "req", "q", "task_id", "1"),
			fuzzStep(cl, "state_get", "req", "g", "keys", "a,n"),
			fuzzStep(cl, "list", "req", "l", "state", "succeeded", "limit", "1"),
			fuzzStep(cl, "stats", "req", "st"), fuzzTick(cl, 7)),
		fuzzProgram(hello, reg, reg2, submit, started, failed, fuzzTick(cl, 2), fuzzTick(cl, 2),
			fuzzStep(ex, "heartbeat", "seq", "1", "running", "1.2,9.9"),
			fuzzStep(ex, "heartbeat", "seq", "2", "running", ""), fuzzTick(cl, 5),
			fuzzStep(ex2, "progress", "task_id", "1", "version", "2", "percent", "50", "note", "half"),
			fuzzStep(ex2, "bye", "reason", "done")),
		fuzzProgram(hello, submit,
			fuzzStep(cl, "submit", "req", "s2", "task_type", "x", "depends_on", "1", "delay_ms", "500"),
			fuzzStep(cl, "submit", "req", "s3", "task_type", "x", "depends_on", "2,1"),
			fuzzStep(cl, "submit", "req", "s4", "task_type", "x", "depends_on", "1", "when", "failed", "optional", "true"),
			fuzzStep(cl, "cancel", "req", "c", "task_id", "1"), reg, fuzzTick(cl, 1),
			fuzzStep(cl, "debug", "req", "d", "on", "true"), []byte{cl | fuzzRestartOp<<2}, reg, hello,
			fuzzStep(ex, "heartbeat", "seq", "1", "running", "1.1")),
		// Admin requests that keep strings from the message: the payload
		// scribbling after Handle catches any kept without a copy. No
		// restart here: it would reload the live state from the records.
		fuzzProgram(hello, reg, fuzzStep(cl, "submit", "req", "s1", "task_type", "x", "max_attempts", "1"),
			fuzzStep(ex, "started", "task_id", "1", "version", "1"),
			fuzzStep(ex, "progress", "task_id", "1", "version", "1", "percent", "40", "note", "busy"),
			fuzzStep(ex, "result", "task_id", "1", "version", "1", "status", "failed", "retryable", "false",
				"error", "boom", "out.k", "v"),
			fuzzStep(cl, "requeue", "req", "r", "task_id", "1", "reason", "fixed the disk"),
			fuzzStep(cl, "state_set", "req", "ss", "key", "a", "value", "hand set"),
			fuzzStep(cl, "state_del", "req", "sd", "key", "a", "state_version", "1"),
			fuzzStep(cl, "pause", "req", "p", "task_type", "x"),
			fuzzStep(cl, "requeue_where", "req", "rw", "state", "failed", "reason", "bulk"),
			fuzzStep(cl, "resume", "req", "u", "task_type", "x"), fuzzStep(cl, "query", "req", "q", "task_id", "1")),
		// Schedules fire from ticks, across a restart.
		fuzzProgram(hello, reg,
			fuzzStep(cl, "schedule_add", "req", "a", "name", "m", "cron", "*/1 * * * *", "task_type", "echo", "arg.k", "v"),
			fuzzStep(cl, "schedule_add", "req", "b", "name", "s.2", "cron", "*/5 * * * * *", "tz", "UTC",
				"missed", "catch_up", "jitter_ms", "1000", "task_type", "x", "label", "l"),
			fuzzTick(cl, 6), fuzzStep(cl, "schedule_list", "req", "l", "limit", "1"),
			fuzzStep(cl, "schedule_pause", "req", "p", "name", "m"), fuzzTick(cl, 6),
			fuzzStep(cl, "schedule_resume", "req", "r", "name", "m"), []byte{cl | fuzzRestartOp<<2}, hello,
			fuzzTick(cl, 4), fuzzStep(cl, "schedule_delete", "req", "d", "name", "s.2"),
			fuzzStep(cl, "schedule_list", "req", "l", "name", "m")),
		// Handler descriptions: kept, replaced, listed, forgotten.
		fuzzProgram(hello, fuzzStep(ex, "register", "executor_id", "e1", "task_types", "echo,x", "slots", "1",
			"describe.0.type", "echo", "describe.0.version", "1", "describe.0.args", "ms:int:required,env.*:string",
			"describe.1.type", "x", "describe.1.name", "ex", "describe.1.timeout_ms", "5000"),
			fuzzStep(ex, "types", "req", "t", "add", "y,echo", "drop", "x", "describe.0.type", "y", "describe.0.version", "2"),
			fuzzStep(cl, "type_list", "req", "l"), fuzzStep(ex, "bye"), fuzzTick(cl, 6),
			fuzzStep(cl, "type_list", "req", "l", "limit", "1")),
		fuzzProgram(reg, submit, hello, submit, submit, started, []byte{ex | fuzzReconnectOp<<2}, reg,
			fuzzStep(ex, "state_get", "req", "g"), fuzzStep(ex, "unknown", "x", "y"),
			fuzzStep(cl, "register", "executor_id", "e3", "task_types", "echo"), fuzzTick(cl, 3), fuzzTick(cl, 4)),
	}
}

// FuzzCore_Messages: whatever four connections send, in any order, with
// clock steps, reconnects and restarts between, the core does not panic;
// every frame it sends decodes and fits max_frame; its indexes stay
// consistent after every step; and its change records rebuild its state.
// Each payload's buffer is overwritten after Handle, so a string the core
// kept without copying shows up as a replay mismatch.
func FuzzCore_Messages(f *testing.F) {
	for _, seed := range fuzzSeeds() {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, program []byte) {
		h := newHarness(t, fuzzConfig)
		h.fx.dec.MaxFrame = h.cfg.MaxFrame
		var conns [fuzzConns]PeerID
		openAll := func() {
			for i := range conns {
				conns[i] = h.open()
			}
		}
		openAll()
		restarted := false
		loads := map[string]int{}
		var dec wire.Decoder
		var buf []byte
		for i, step := range bytes.SplitN(program, []byte("\n\n"), fuzzMaxSteps) {
			if len(step) == 0 {
				continue
			}
			conn, op := step[0]&(fuzzConns-1), step[0]>>2
			switch {
			case op < fuzzTickOp:
				buf = append(buf[:0], step[1:]...)
				m, err := dec.DecodePayload(buf)
				if err != nil {
					continue
				}
				h.c.Handle(conns[conn], m)
				for j := range buf {
					buf[j] = 'X'
				}
			case op < fuzzReconnectOp:
				h.advance(fuzzSteps[op-fuzzTickOp])
			case op < fuzzRestartOp:
				h.c.Closed(conns[conn])
				h.next++
				conns[conn] = h.next
				h.c.Open(conns[conn])
			default:
				h.restart()
				restarted = true
				openAll()
			}
			if err := checkInvariants(h.c, loads); err != nil {
				t.Fatalf("step %d (%q): %v", i, step, err)
			}
			clear(h.fx.frames)
		}
		live, replayed := dump(h.c), dump(h.replayed())
		if restarted {
			// A restored running task's deadline is set when it is listed:
			// live state, not in the log.
			var ids []uint64
			h.c.tasks.scan(0, Running, func(t *task) bool { ids = append(ids, t.id); return true })
			live, replayed = maskDue(live, ids...), maskDue(replayed, ids...)
		}
		require.Equal(t, live, replayed, "replay")
	})
}
