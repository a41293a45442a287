package core

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/apollo11/apollo11/wire"
)

// TestRoutes_MatchWireSenders keeps the handler tables and wire's sender
// table in step: a handler only for a role that may send the type, and
// every type a peer may send handled, except error, which is only logged.
func TestRoutes_MatchWireSenders(t *testing.T) {
	for k := range handshakeHandlers {
		assert.True(t, k.SentBy(wire.RoleClient|wire.RoleExecutor), "handshake %s", k)
	}
	for k := range clientHandlers {
		assert.True(t, k.SentBy(wire.RoleClient), "client handler for %s, which clients do not send", k)
	}
	for k := range executorHandlers {
		assert.True(t, k.SentBy(wire.RoleExecutor), "executor handler for %s, which executors do not send", k)
	}
	for _, k := range wire.Kinds() {
		if k == wire.KindError {
			continue
		}
		if k.SentBy(wire.RoleClient) {
			_, hs := handshakeHandlers[k]
			_, h := clientHandlers[k]
			assert.True(t, hs || h, "clients may send %s but no handler takes it", k)
		}
		if k.SentBy(wire.RoleExecutor) {
			_, hs := handshakeHandlers[k]
			_, h := executorHandlers[k]
			assert.True(t, hs || h, "executors may send %s but no handler takes it", k)
		}
	}
}

// TestRoutes_RefusalByTable checks the refusal each table derives: a known
// type from the wrong peer is not_permitted, an unknown one unknown_type.
func TestRoutes_RefusalByTable(t *testing.T) {
	h := newHarness(t)
	cl := h.client()
	ex := h.executor("e1", "t", 1)
	for _, k := range wire.Kinds() {
		if _, ok := clientHandlers[k]; !ok && k != wire.KindError {
			h.send(cl, string(k), "req", "r")
			m := h.expect(cl, "error")
			assert.Equal(t, string(wire.CodeNotPermitted), m.Value("code"), "client sends %s", k)
		}
		if _, ok := executorHandlers[k]; !ok && k != wire.KindError {
			h.send(ex, string(k))
			m := h.expect(ex, "error")
			assert.Equal(t, string(wire.CodeNotPermitted), m.Value("code"), "executor sends %s", k)
		}
	}
	h.send(cl, "nosuch", "req", "r")
	assert.Equal(t, string(wire.CodeUnknownType), h.expect(cl, "error").Value("code"))
	h.send(ex, "nosuch")
	assert.Equal(t, string(wire.CodeUnknownType), h.expect(ex, "error").Value("code"))
}
