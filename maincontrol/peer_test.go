package maincontrol_test

import (
	"encoding/binary"
	"errors"
	"net"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/wire"
)

// More rawPeer helpers for the conformance suite: raw frames and bytes,
// error checks, and short request/reply round trips.

// frameOf returns payload with its 4-byte big-endian length header, written
// by hand so that any payload, valid or not, can be sent.
func frameOf(payload string) []byte {
	b := make([]byte, wire.HeaderLen, wire.HeaderLen+len(payload))
	binary.BigEndian.PutUint32(b, uint32(len(payload)))
	return append(b, payload...)
}

// header returns just a frame header announcing n payload bytes.
func header(n uint32) []byte {
	var b [wire.HeaderLen]byte
	binary.BigEndian.PutUint32(b[:], n)
	return b[:]
}

// writeRaw writes bytes as they are.
func (p *rawPeer) writeRaw(b []byte) {
	p.t.Helper()
	require.NoError(p.t, p.c.SetWriteDeadline(time.Now().Add(10*time.Second)))
	_, err := p.c.Write(b)
	require.NoError(p.t, err)
}

// sendPayload frames payload by hand and writes it.
func (p *rawPeer) sendPayload(payload string) {
	p.t.Helper()
	p.writeRaw(frameOf(payload))
}

// request sends a request and returns the next frame.
func (p *rawPeer) request(typ string, kv ...string) *wire.Message {
	p.t.Helper()
	p.send(typ, kv...)
	return p.recv()
}

// expectError reads an error frame with the given code and checks its req:
// req "" means the reply must carry no req at all.
func (p *rawPeer) expectError(code wire.Code, req string) *wire.Message {
	p.t.Helper()
	m := p.expect("error")
	require.Equal(p.t, string(code), m.Value("code"), "got %s", m)
	if req == "" {
		assert.False(p.t, m.Has("req"), "error must carry no req: %s", m)
	} else {
		assert.Equal(p.t, req, m.Value("req"), "error must echo req: %s", m)
	}
	assert.NotEmpty(p.t, m.Value("message"), "error without message: %s", m)
	return m
}

// expectErrorClose expects an error frame with code, then the close.
func (p *rawPeer) expectErrorClose(code wire.Code, req string) *wire.Message {
	p.t.Helper()
	m := p.expectError(code, req)
	p.expectClosed()
	return m
}

// expectClosedSilently expects the connection to close with no frame at all.
func (p *rawPeer) expectClosedSilently(within time.Duration) {
	p.t.Helper()
	require.NoError(p.t, p.c.SetReadDeadline(time.Now().Add(within)))
	m, err := p.r.ReadMessage()
	require.Nil(p.t, m, "no frame expected before the close, got %s", m)
	var ne net.Error
	require.False(p.t, errors.As(err, &ne) && ne.Timeout(), "connection not closed within %v", within)
	require.Error(p.t, err)
}

// alive proves a client connection is open and in sync: a stats round
// trip with a fresh req.
func (p *rawPeer) alive(req string) {
	p.t.Helper()
	m := p.request("stats", "req", req)
	require.Equal(p.t, "stats", m.Type(), "got %s", m)
	require.Equal(p.t, req, m.Value("req"))
}

// aliveExec proves an executor connection is open: heartbeat and pong.
func (p *rawPeer) aliveExec(seq int) {
	p.t.Helper()
	m := p.request("heartbeat", "seq", strconv.Itoa(seq), "running", "")
	require.Equal(p.t, "pong", m.Type(), "got %s", m)
	require.Equal(p.t, strconv.Itoa(seq), m.Value("seq"))
}

// submit sends a submit and returns the new task's id.
func (p *rawPeer) submit(req string, kv ...string) uint64 {
	p.t.Helper()
	m := p.request("submit", append([]string{"req", req}, kv...)...)
	require.Equal(p.t, "submitted", m.Type(), "got %s", m)
	require.Equal(p.t, req, m.Value("req"))
	id, err := strconv.ParseUint(m.Value("task_id"), 10, 64)
	require.NoError(p.t, err)
	return id
}

// query returns the task_state of id.
func (p *rawPeer) query(id uint64) *wire.Message {
	p.t.Helper()
	req := "q" + strconv.FormatUint(id, 10)
	m := p.request("query", "req", req, "task_id", strconv.FormatUint(id, 10))
	require.Equal(p.t, "task_state", m.Type(), "got %s", m)
	require.Equal(p.t, req, m.Value("req"))
	return m
}

// stateOf returns the state of task id.
func (p *rawPeer) stateOf(id uint64) string {
	p.t.Helper()
	return p.query(id).Value("state")
}

// waitState polls until task id is in state want.
func (p *rawPeer) waitState(id uint64, want string, within time.Duration) *wire.Message {
	p.t.Helper()
	deadline := time.Now().Add(within)
	for {
		m := p.query(id)
		if m.Value("state") == want {
			return m
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("task %d: state %s, want %s after %v", id, m.Value("state"), want, within)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// expectTask reads a task frame for id (0: any).
func (p *rawPeer) expectTask(id uint64) *wire.Message {
	p.t.Helper()
	m := p.expect("task")
	if id != 0 {
		require.Equal(p.t, strconv.FormatUint(id, 10), m.Value("task_id"), "got %s", m)
	}
	return m
}

// start sends started for a task frame.
func (p *rawPeer) start(task *wire.Message) {
	p.t.Helper()
	p.send("started", "task_id", task.Value("task_id"), "version", task.Value("version"))
}

// finish sends a result for a task frame and returns the result_ack.
func (p *rawPeer) finish(task *wire.Message, kv ...string) *wire.Message {
	p.t.Helper()
	base := []string{"task_id", task.Value("task_id"), "version", task.Value("version")}
	m := p.request("result", append(base, kv...)...)
	require.Equal(p.t, "result_ack", m.Type(), "got %s", m)
	require.Equal(p.t, task.Value("task_id"), m.Value("task_id"))
	require.Equal(p.t, task.Value("version"), m.Value("version"))
	return m
}

// keysOf returns the keys of m, sorted.
func keysOf(m *wire.Message) []string {
	ks := make([]string, 0, len(m.Fields))
	for _, f := range m.Fields {
		ks = append(ks, f.Key)
	}
	slices.Sort(ks)
	return ks
}

// assertKeys checks that m has exactly the given keys.
func assertKeys(t testing.TB, m *wire.Message, keys ...string) {
	t.Helper()
	want := slices.Clone(keys)
	slices.Sort(want)
	assert.Equal(t, want, keysOf(m), "keys of %s", m)
}

// assertUint checks that key k of m is a canonical decimal number and
// returns it.
func assertUint(t testing.TB, m *wire.Message, k string) uint64 {
	t.Helper()
	v, ok := m.Get(k)
	require.True(t, ok, "%s missing in %s", k, m)
	n, ok := wire.ParseUint(v)
	require.True(t, ok, "%s=%q is not a number", k, v)
	return n
}

// u is strconv.FormatUint for short test lines.
func u(n uint64) string { return strconv.FormatUint(n, 10) }

// readUntilClosed reads whatever arrives until the peer closes or d passes, and
// reports whether the connection was closed.
func readUntilClosed(c net.Conn, d time.Duration) (closed bool) {
	_ = c.SetReadDeadline(time.Now().Add(d))
	buf := make([]byte, 64<<10)
	for {
		_, err := c.Read(buf)
		if err == nil {
			continue
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return false
		}
		return true // EOF or reset
	}
}
