package maincontrol_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/maincontrol"
	"github.com/apollo11/apollo11/maincontrol/core"
	"github.com/apollo11/apollo11/wire"
)

// Every error rule of wire-v1, over real sockets: the code, the req, and
// whether the connection stays open.

func TestErrors_FrameTooLarge(t *testing.T) {
	t.Parallel()
	for _, maxFrame := range []int{0, 4096} {
		limit := maxFrame
		if limit == 0 {
			limit = wire.DefaultMaxFrame
		}
		addr := startServer(t, maincontrol.Config{Core: core.Config{MaxFrame: maxFrame}})
		name := "max_frame=" + strconv.Itoa(limit)
		tests := []struct {
			name   string
			dial   func(t *testing.T) *rawPeer
			announ uint32
		}{
			{"before the handshake", func(t *testing.T) *rawPeer { return dialRaw(t, addr) }, uint32(limit) + 1},
			{"from a client", func(t *testing.T) *rawPeer { return clientPeer(t, addr) }, uint32(limit) + 1},
			{"from an executor", func(t *testing.T) *rawPeer { return executorPeer(t, addr, "big", "t", 1) }, uint32(limit) + 1},
			{"4 GiB", func(t *testing.T) *rawPeer { return clientPeer(t, addr) }, 1<<32 - 1},
		}
		for _, tc := range tests {
			t.Run(name+"/"+tc.name, func(t *testing.T) {
				p := tc.dial(t)
				assert.Equal(t, strconv.Itoa(limit), p.hello.Value("max_frame"))
				// Only the header: the answer must not wait for the payload.
				p.writeRaw(header(tc.announ))
				p.expectErrorClose(wire.CodeFrameTooLarge, "")
			})
		}
		t.Run(name+"/header and the whole payload", func(t *testing.T) {
			p := clientPeer(t, addr)
			frame := append(header(uint32(limit)+1), make([]byte, limit+1)...)
			go func() { _, _ = p.c.Write(frame) }() // may fail once the server closes
			p.expectErrorClose(wire.CodeFrameTooLarge, "")
		})
		t.Run(name+"/exactly max_frame is accepted", func(t *testing.T) {
			p := clientPeer(t, addr)
			payload := "type=stats\nreq=full\npad="
			payload += strings.Repeat("x", limit-len(payload))
			require.Len(t, payload, limit)
			p.sendPayload(payload)
			m := p.expect("stats")
			assert.Equal(t, "full", m.Value("req"))
		})
	}
}

func TestErrors_Malformed(t *testing.T) {
	t.Parallel()
	addr := startServer(t, maincontrol.Config{})
	tests := []struct {
		name  string
		frame []byte
	}{
		{"zero-length frame", header(0)},
		{"bad escape", frameOf("type=stats\nreq=a\\x")},
		{"lone backslash", frameOf("type=stats\nreq=a\\")},
		{"raw = in a value", frameOf("type=stats\nreq=a=b")},
		{"upper-case key", frameOf("type=stats\nReq=a")},
		{"upper-case type key", frameOf("TYPE=stats")},
		{"bad key byte", frameOf("type=stats\nre q=a")},
		{"empty key", frameOf("type=stats\n=a")},
		{"key of 65 bytes", frameOf("type=stats\n" + strings.Repeat("k", 65) + "=a")},
		{"key arg.", frameOf("type=stats\narg.=a")},
		{"key out.", frameOf("type=stats\nout.=a")},
		{"key state.", frameOf("type=stats\nstate.=a")},
		{"key state.set.", frameOf("type=stats\nstate.set.=a")},
		{"key state.add.", frameOf("type=stats\nstate.add.=a")},
		{"no type", frameOf("req=a")},
		{"duplicate key", frameOf("type=stats\nreq=a\nreq=b")},
		{"duplicate type", frameOf("type=stats\ntype=stats")},
		{"invalid UTF-8", frameOf("type=stats\nreq=\xff\xfe")},
		{"invalid UTF-8 in a key", frameOf("type=stats\n\xc3=a")},
		{"empty line", frameOf("type=stats\n\nreq=a")},
		{"leading empty line", frameOf("\ntype=stats")},
		{"two trailing LFs", frameOf("type=stats\n\n")},
		{"only a LF", frameOf("\n")},
		{"line without =", frameOf("type=stats\nreq")},
		{"1,025 keys", frameOf(keysPayload(wire.MaxKeys - 1))},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := clientPeer(t, addr)
			p.writeRaw(tc.frame)
			p.expectErrorClose(wire.CodeMalformed, "")
		})
		t.Run(tc.name+" before the handshake", func(t *testing.T) {
			p := dialRaw(t, addr)
			p.writeRaw(tc.frame)
			p.expectErrorClose(wire.CodeMalformed, "")
		})
	}
	t.Run("from an executor", func(t *testing.T) {
		p := executorPeer(t, addr, "e1", "t", 1)
		p.sendPayload("type=heartbeat\nseq=1\nseq=2")
		p.expectErrorClose(wire.CodeMalformed, "")
	})

	valid := []struct {
		name, payload string
	}{
		{"one trailing LF", "type=stats\nreq=lf\n"},
		{"type not first", "req=lf\ntype=stats"},
		{"escapes", "type=stats\nreq=lf\nx=\\\\\\n\\e"},
		{"1,024 keys", keysPayload(wire.MaxKeys - 2)},
		{"empty value", "type=stats\nreq=lf\nx="},
		{"key of 64 bytes", "type=stats\nreq=lf\n" + strings.Repeat("k", 64) + "=a"},
		{"multi-byte UTF-8", "type=stats\nreq=lf\nnote=héllo ✓"},
	}
	for _, tc := range valid {
		t.Run("valid: "+tc.name, func(t *testing.T) {
			p := clientPeer(t, addr)
			p.sendPayload(tc.payload)
			m := p.expect("stats")
			assert.Equal(t, "lf", m.Value("req"))
			p.alive("after")
		})
	}
}

// keysPayload is a stats request with req=lf and n more keys.
func keysPayload(n int) string {
	var b strings.Builder
	b.WriteString("type=stats\nreq=lf")
	for i := 0; i < n; i++ {
		b.WriteString("\nk" + strconv.Itoa(i) + "=v")
	}
	return b.String()
}

func TestErrors_UnknownType(t *testing.T) {
	t.Parallel()
	addr := startServer(t, maincontrol.Config{})
	t.Run("client", func(t *testing.T) {
		p := clientPeer(t, addr)
		p.send("frobnicate", "req", "u1", "x", "y")
		p.expectError(wire.CodeUnknownType, "u1")
		p.send("frobnicate")
		p.expectError(wire.CodeUnknownType, "")
		p.alive("after")
	})
	t.Run("executor", func(t *testing.T) {
		p := executorPeer(t, addr, "e1", "t", 1)
		p.send("frobnicate", "x", "y")
		p.expectError(wire.CodeUnknownType, "")
		p.aliveExec(1)
	})
}

func TestErrors_BadRequest(t *testing.T) {
	t.Parallel()
	addr := startServer(t, maincontrol.Config{})
	cl := clientPeer(t, addr)
	known := cl.submit("k", "task_type", "t")
	tests := []struct {
		name string
		typ  string
		kv   []string
	}{
		{"priority=10", "submit", []string{"task_type", "t", "priority", "10"}},
		{"priority negative", "submit", []string{"task_type", "t", "priority", "-1"}},
		{"priority leading zero", "submit", []string{"task_type", "t", "priority", "01"}},
		{"priority empty", "submit", []string{"task_type", "t", "priority", ""}},
		{"missing task_type", "submit", []string{"arg.x", "1"}},
		{"empty task_type", "submit", []string{"task_type", ""}},
		{"max_attempts=0", "submit", []string{"task_type", "t", "max_attempts", "0"}},
		{"timeout_ms over uint64", "submit", []string{"task_type", "t", "timeout_ms", "18446744073709551616"}},
		{"delay_ms not a number", "submit", []string{"task_type", "t", "delay_ms", "1s"}},
		{"wait not a boolean", "submit", []string{"task_type", "t", "wait", "yes"}},
		{"wait upper-case", "submit", []string{"task_type", "t", "wait", "TRUE"}},
		{"depends_on empty item", "submit", []string{"task_type", "t", "depends_on", u(known) + ",," + u(known)}},
		{"depends_on with a space", "submit", []string{"task_type", "t", "depends_on", u(known) + ", " + u(known)}},
		{"depends_on unknown task", "submit", []string{"task_type", "t", "depends_on", u(known) + ",99999"}},
		{"depends_on not an id", "submit", []string{"task_type", "t", "depends_on", "abc"}},
		{"empty key", "submit", []string{"task_type", "t", "key", ""}},
		{"query without task_id", "query", nil},
		{"query task_id not a number", "query", []string{"task_id", "x1"}},
		{"cancel without task_id", "cancel", nil},
		{"cancel task_id negative", "cancel", []string{"task_id", "-3"}},
		{"list without state", "list", nil},
		{"list unknown state", "list", []string{"state", "done"}},
		{"list upper-case state", "list", []string{"state", "PENDING"}},
		{"list limit=0", "list", []string{"state", "pending", "limit", "0"}},
		{"list limit=1001", "list", []string{"state", "pending", "limit", "1001"}},
		{"list limit not a number", "list", []string{"state", "pending", "limit", "ten"}},
		{"list after not a number", "list", []string{"state", "pending", "after", "x"}},
		{"debug without on", "debug", nil},
		{"debug on=1", "debug", []string{"on", "1"}},
		{"state_get empty key in the list", "state_get", []string{"keys", "a,,b"}},
		{"state_get trailing comma", "state_get", []string{"keys", "a,"}},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := "br" + strconv.Itoa(i)
			cl.send(tc.typ, append([]string{"req", req}, tc.kv...)...)
			m := cl.expectError(wire.CodeBadRequest, req)
			t.Log(m.Value("message"))
			cl.alive("alive" + strconv.Itoa(i))
		})
	}
	assert.Equal(t, "1", cl.request("stats", "req", "s").Value("tasks.pending"), "no bad submit created a task")

	t.Run("req over 64 bytes: bad_request without req", func(t *testing.T) {
		for _, typ := range []string{"submit", "query", "stats", "list", "frobnicate", "heartbeat"} {
			cl.send(typ, "req", strings.Repeat("r", 65), "task_type", "t", "task_id", u(known), "state", "pending")
			m := cl.expect("error")
			assert.False(t, m.Has("req"), "%s: %s", typ, m)
			if typ == "submit" || typ == "query" || typ == "stats" || typ == "list" {
				assert.Equal(t, string(wire.CodeBadRequest), m.Value("code"), "%s", typ)
			}
			cl.alive("after-" + typ)
		}
		assert.Equal(t, "1", cl.request("stats", "req", "s").Value("tasks.pending"))
	})
	t.Run("req of 64 bytes after unescaping", func(t *testing.T) {
		req := strings.Repeat("=", 64) // 128 bytes on the wire
		cl.alive(req)
		cl.send("stats", "req", req+"\n") // 65 after unescaping
		cl.expectError(wire.CodeBadRequest, "")
	})
	t.Run("hello with an oversize req does not complete the handshake", func(t *testing.T) {
		p := dialRaw(t, addr)
		p.send("hello", "req", strings.Repeat("h", 65))
		p.expectError(wire.CodeBadRequest, "")
		p.send("stats", "req", "s")
		p.expectErrorClose(wire.CodeNotRegistered, "s")
	})
	t.Run("hello retried after bad_request", func(t *testing.T) {
		p := dialRaw(t, addr)
		p.send("hello", "req", strings.Repeat("h", 65))
		p.expectError(wire.CodeBadRequest, "")
		p.send("hello", "req", "h2")
		assert.Equal(t, "h2", p.expect("hello_ok").Value("req"))
		p.alive("a")
	})
}

func TestErrors_BadRequestExecutor(t *testing.T) {
	t.Parallel()
	addr := startServer(t, maincontrol.Config{})
	registers := []struct {
		name string
		kv   []string
	}{
		{"slots=0", []string{"executor_id", "e1", "task_types", "t", "slots", "0"}},
		{"slots=65537", []string{"executor_id", "e1", "task_types", "t", "slots", "65537"}},
		{"slots not a number", []string{"executor_id", "e1", "task_types", "t", "slots", "two"}},
		{"missing executor_id", []string{"task_types", "t"}},
		{"empty executor_id", []string{"executor_id", "", "task_types", "t"}},
		{"executor_id with a space", []string{"executor_id", "e 1", "task_types", "t"}},
		{"executor_id with a slash", []string{"executor_id", "e/1", "task_types", "t"}},
		{"executor_id of 129 bytes", []string{"executor_id", strings.Repeat("e", 129), "task_types", "t"}},
		{"task_types empty item", []string{"executor_id", "e1", "task_types", "a,,b"}},
	}
	for _, tc := range registers {
		t.Run("register "+tc.name, func(t *testing.T) {
			p := dialRaw(t, addr)
			p.send("register", tc.kv...)
			p.expectError(wire.CodeBadRequest, "")
			// The handshake is not complete: another register may follow.
			p.send("register", "executor_id", "ok-"+strconv.Itoa(len(tc.name)), "task_types", "t", "slots", "65536")
			p.expect("registered")
			p.send("bye")
			p.expect("bye_ack")
		})
	}
	// An absent list key means the same as an empty one (spec section 3):
	// no task_types registers an executor that gets no tasks, as
	// task_types= does.
	for _, kv := range [][]string{{"executor_id", "no-types"}, {"executor_id", "empty-types", "task_types", ""}} {
		t.Run("register "+kv[1], func(t *testing.T) {
			p := dialRaw(t, addr)
			p.send("register", kv...)
			p.expect("registered")
			p.send("bye")
			p.expect("bye_ack")
		})
	}
	t.Run("register executor_id of 128 bytes", func(t *testing.T) {
		p := dialRaw(t, addr)
		p.send("register", "executor_id", strings.Repeat("E", 128), "task_types", "")
		p.expect("registered")
	})

	ex := executorPeer(t, addr, "e2", "t", 1)
	msgs := []struct {
		name string
		typ  string
		kv   []string
	}{
		{"heartbeat without seq", "heartbeat", []string{"running", ""}},
		{"heartbeat running not a token", "heartbeat", []string{"seq", "1", "running", "abc"}},
		{"heartbeat running empty item", "heartbeat", []string{"seq", "1", "running", "1.1,,2.1"}},
		{"started without version", "started", []string{"task_id", "1"}},
		{"started task_id not a number", "started", []string{"task_id", "x", "version", "1"}},
		{"progress percent=101", "progress", []string{"task_id", "1", "version", "1", "percent", "101"}},
		{"progress without percent", "progress", []string{"task_id", "1", "version", "1"}},
		{"result without status", "result", []string{"task_id", "1", "version", "1"}},
		{"result status=done", "result", []string{"task_id", "1", "version", "1", "status", "done"}},
		{"result retryable=maybe", "result", []string{"task_id", "1", "version", "1", "status", "failed", "retryable", "maybe"}},
		{"result without version", "result", []string{"task_id", "1", "status", "succeeded"}},
	}
	for i, tc := range msgs {
		t.Run(tc.name, func(t *testing.T) {
			ex.send(tc.typ, tc.kv...)
			ex.expectError(wire.CodeBadRequest, "")
			ex.aliveExec(i + 1)
		})
	}
}
