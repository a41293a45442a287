package maincontrol_test

import (
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/maincontrol"
	"github.com/apollo11/apollo11/wire"
)

// Spec section 2: everything the main control writes is canonical: type
// first, no trailing LF, values escaped, and it re-encodes to itself byte
// for byte.

// canonPeer reads frames by hand so that their exact bytes can be checked.
type canonPeer struct {
	t *testing.T
	c net.Conn
	w *wire.Writer
}

func (p *canonPeer) read() *wire.Message {
	p.t.Helper()
	require.NoError(p.t, p.c.SetReadDeadline(time.Now().Add(5*time.Second)))
	var hdr [wire.HeaderLen]byte
	_, err := io.ReadFull(p.c, hdr[:])
	require.NoError(p.t, err)
	payload := make([]byte, binary.BigEndian.Uint32(hdr[:]))
	_, err = io.ReadFull(p.c, payload)
	require.NoError(p.t, err)
	frame := append(hdr[:], payload...)

	assert.True(p.t, bytes.HasPrefix(payload, []byte("type=")), "type first: %q", payload)
	assert.False(p.t, bytes.HasSuffix(payload, []byte("\n")), "no trailing LF: %q", payload)
	m, n, err := wire.NewDecoder(0).Decode(frame)
	require.NoError(p.t, err, "%q", payload)
	require.Equal(p.t, len(frame), n)
	m = m.Clone()
	again, err := wire.AppendFrame(nil, m)
	require.NoError(p.t, err)
	assert.Equal(p.t, string(frame), string(again), "re-encodes byte for byte")
	return m
}

func (p *canonPeer) send(typ string, kv ...string) {
	p.t.Helper()
	m := wire.NewMessage(wire.Kind(typ))
	for i := 0; i+1 < len(kv); i += 2 {
		m.Set(kv[i], kv[i+1])
	}
	require.NoError(p.t, p.w.Send(m))
}

func dialCanon(t *testing.T, addr string) *canonPeer {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	p := &canonPeer{t: t, c: c, w: wire.NewWriter(c, 0)}
	require.Equal(t, "welcome", p.read().Type())
	return p
}

func TestEncoding_Canonical(t *testing.T) {
	t.Parallel()
	addr := startServer(t, maincontrol.Config{})
	cl := dialCanon(t, addr)
	ex := dialCanon(t, addr)
	weird := "a=b\nc\\d\\e=\n" + strings.Repeat("é", 3)

	cl.send("hello", "req", weird)
	assert.Equal(t, weird, cl.read().Value("req"))
	ex.send("register", "executor_id", "e1", "task_types", "t", "slots", "2")
	ex.read()
	ex.send("heartbeat", "seq", "1", "running", "")
	ex.read()

	cl.send("submit", "req", weird, "task_type", "t", "arg.w", weird, "arg.empty", "", "trace_id", weird, "wait", "true")
	sub := cl.read()
	task := ex.read()
	assert.Equal(t, weird, task.Value("arg.w"))
	assert.Equal(t, weird, task.Value("trace_id"))
	ex.send("started", "task_id", sub.Value("task_id"), "version", task.Value("version"))
	ex.send("result", "task_id", sub.Value("task_id"), "version", task.Value("version"), "status", "succeeded",
		"out.w", weird, "out.e", "", "state.set.w", weird)
	ex.read()                                        // result_ack
	assert.Equal(t, weird, cl.read().Value("out.w")) // done
	for _, req := range [][]string{
		{"query", "task_id", sub.Value("task_id")},
		{"list", "state", "succeeded"},
		{"list", "state", "running"},
		{"stats"},
		{"state_get"},
		{"debug", "on", "false"},
		{"query", "task_id", "999"},
		{"frobnicate"},
		{"list", "state", "nope"},
	} {
		cl.send(req[0], append([]string{"req", weird}, req[1:]...)...)
		m := cl.read()
		assert.Equal(t, weird, m.Value("req"), "%s", m)
	}
	ex.send("state_get", "req", weird, "keys", "w")
	assert.Equal(t, weird, ex.read().Value("state.w"))
	cl.send("submit", "req", "c", "task_type", "t")
	id := cl.read().Value("task_id")
	ex.read() // task
	cl.send("cancel", "req", "c", "task_id", id)
	cl.read() // cancelled
	ex.read() // cancel
	ex.send("bye")
	ex.read() // bye_ack
}
