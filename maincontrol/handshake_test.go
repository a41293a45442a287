package maincontrol_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/apollo11/apollo11/maincontrol"
	"github.com/apollo11/apollo11/maincontrol/core"
	"github.com/apollo11/apollo11/wire"
)

// Spec section 3, step 4: the handshake timeout.

func TestHandshake_Timeout(t *testing.T) {
	t.Parallel()
	const timeout = 300 * time.Millisecond
	addr := startServer(t, maincontrol.Config{Core: core.Config{HandshakeTimeout: timeout}})
	tests := []struct {
		name string
		do   func(p *rawPeer)
	}{
		{"sends nothing", func(*rawPeer) {}},
		{"half a header", func(p *rawPeer) { p.writeRaw([]byte{0, 0}) }},
		{"half a frame", func(p *rawPeer) { p.writeRaw(frameOf("type=hello\nreq=h")[:10]) }},
		{"a header only", func(p *rawPeer) { p.writeRaw(header(100)) }},
		{"a hello refused with bad_request", func(p *rawPeer) {
			p.send("hello", "req", string(make([]byte, 65)))
			p.expectError(wire.CodeBadRequest, "")
		}},
		{"a register refused with bad_request", func(p *rawPeer) {
			p.send("register", "executor_id", "e1", "task_types", "t", "slots", "0")
			p.expectError(wire.CodeBadRequest, "")
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			p := dialRaw(t, addr)
			tc.do(p)
			p.expectClosedSilently(5 * time.Second)
			assert.GreaterOrEqual(t, time.Since(start), timeout-50*time.Millisecond, "closed before the timeout")
		})
	}
	t.Run("idle client is kept", func(t *testing.T) {
		t.Parallel()
		p := clientPeer(t, addr)
		time.Sleep(3 * timeout)
		p.alive("still here")
	})
	t.Run("registered executor is not subject to it", func(t *testing.T) {
		t.Parallel()
		p := executorPeer(t, addr, "e-idle", "t", 1)
		time.Sleep(3 * timeout)
		p.aliveExec(1)
	})
	t.Run("hello after a bad_request within the timeout", func(t *testing.T) {
		t.Parallel()
		p := dialRaw(t, addr)
		p.send("hello", "req", string(make([]byte, 65)))
		p.expectError(wire.CodeBadRequest, "")
		p.send("hello", "req", "h")
		p.expect("hello_ok")
		time.Sleep(2 * timeout)
		p.alive("kept")
	})
}
