package maincontrol_test

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/auth"
	"github.com/apollo11/apollo11/internal/syncbuf"
	"github.com/apollo11/apollo11/maincontrol"
	"github.com/apollo11/apollo11/maincontrol/core"
	"github.com/apollo11/apollo11/wire"
)

// Spec section 3, step 3: the HMAC handshake.

var testToken = []byte("s3cret")

func TestAuth_HMAC(t *testing.T) {
	t.Parallel()
	addr := startServer(t, maincontrol.Config{Core: core.Config{Token: testToken}})
	other := dialRaw(t, addr).hello.Value("nonce")

	t.Run("right MAC: hello", func(t *testing.T) {
		p := dialRaw(t, addr)
		assert.Equal(t, "hmac-sha256", p.hello.Value("auth"))
		m := p.request("hello", "req", "h", "auth", auth.Sign(testToken, p.hello.Value("nonce")))
		assert.Equal(t, "hello_ok", m.Type(), "got %s", m)
		assert.Equal(t, "h", m.Value("req"))
		p.alive("a")
	})
	t.Run("right MAC: register", func(t *testing.T) {
		p := dialRaw(t, addr)
		m := p.request("register", "executor_id", "e1", "task_types", "t",
			"auth", auth.Sign(testToken, p.hello.Value("nonce")))
		assert.Equal(t, "registered", m.Type(), "got %s", m)
		p.aliveExec(1)
	})

	wrong := []struct {
		name string
		mac  func(nonce string) string
	}{
		{"missing", nil},
		{"empty", func(string) string { return "" }},
		{"wrong token", func(n string) string { return auth.Sign([]byte("s3cre"), n) }},
		{"token with a newline", func(n string) string { return auth.Sign([]byte("s3cret\n"), n) }},
		{"another connection's nonce", func(string) string { return auth.Sign(testToken, other) }},
		{"upper-case hex", func(n string) string { return strings.ToUpper(auth.Sign(testToken, n)) }},
		{"one upper-case digit", func(n string) string {
			mac := auth.Sign(testToken, n)
			i := strings.IndexAny(mac, "abcdef")
			return mac[:i] + strings.ToUpper(mac[i:i+1]) + mac[i+1:]
		}},
		{"truncated", func(n string) string { return auth.Sign(testToken, n)[:63] }},
		{"one byte more", func(n string) string { return auth.Sign(testToken, n) + "0" }},
		{"the token itself", func(string) string { return string(testToken) }},
		{"the nonce", func(n string) string { return n }},
	}
	for _, tc := range wrong {
		t.Run("hello "+tc.name, func(t *testing.T) {
			p := dialRaw(t, addr)
			kv := []string{"req", "h"}
			if tc.mac != nil {
				kv = append(kv, "auth", tc.mac(p.hello.Value("nonce")))
			}
			p.send("hello", kv...)
			p.expectErrorClose(wire.CodeAuthFailed, "h")
		})
		t.Run("register "+tc.name, func(t *testing.T) {
			p := dialRaw(t, addr)
			kv := []string{"executor_id", "e2", "task_types", "t"}
			if tc.mac != nil {
				kv = append(kv, "auth", tc.mac(p.hello.Value("nonce")))
			}
			p.send("register", kv...)
			p.expectErrorClose(wire.CodeAuthFailed, "")
		})
	}

	t.Run("order: proto, auth, values", func(t *testing.T) {
		p := dialRaw(t, addr)
		p.send("hello", "req", "h", "proto", "2")
		p.expectErrorClose(wire.CodeUnsupportedProto, "h")

		p = dialRaw(t, addr)
		p.send("register", "executor_id", "e3", "task_types", "t", "slots", "0")
		p.expectErrorClose(wire.CodeAuthFailed, "")

		p = dialRaw(t, addr)
		mac := auth.Sign(testToken, p.hello.Value("nonce"))
		p.send("register", "executor_id", "e3", "task_types", "t", "slots", "0", "auth", mac)
		p.expectError(wire.CodeBadRequest, "")
		p.send("register", "executor_id", "e3", "task_types", "t", "auth", mac)
		p.expect("registered")
	})
	t.Run("auth is checked before values: an oversize req is not echoed", func(t *testing.T) {
		p := dialRaw(t, addr)
		p.send("hello", "req", strings.Repeat("r", 65))
		p.expectErrorClose(wire.CodeAuthFailed, "")
	})
	t.Run("not_registered with auth on", func(t *testing.T) {
		p := dialRaw(t, addr)
		p.send("stats", "req", "s")
		p.expectErrorClose(wire.CodeNotRegistered, "s")
	})
	t.Run("repeated failures do not lock out an honest peer", func(t *testing.T) {
		for i := 0; i < 50; i++ {
			p := dialRaw(t, addr)
			p.send("hello", "auth", auth.Sign([]byte("guess"), p.hello.Value("nonce")))
			p.expectErrorClose(wire.CodeAuthFailed, "")
		}
		p := dialRaw(t, addr)
		p.send("hello", "req", "honest", "auth", auth.Sign(testToken, p.hello.Value("nonce")))
		assert.Equal(t, "honest", p.expect("hello_ok").Value("req"))
		p.alive("a")
	})
}

func TestAuth_NoneIgnoresAuthKey(t *testing.T) {
	t.Parallel()
	addr := startServer(t, maincontrol.Config{})
	for _, v := range []string{"", "garbage", strings.Repeat("A", 64)} {
		p := dialRaw(t, addr)
		assert.Equal(t, "none", p.hello.Value("auth"))
		m := p.request("hello", "req", "h", "auth", v)
		assert.Equal(t, "hello_ok", m.Type(), "got %s", m)

		p = dialRaw(t, addr)
		m = p.request("register", "executor_id", "e-"+v, "task_types", "t", "auth", v)
		assert.Equal(t, "registered", m.Type(), "got %s", m)
	}
}

// A refused authentication is logged with the peer's address: an
// internal peer number alone does not tell the operator who knocked.
func TestAuth_FailureLogsRemote(t *testing.T) {
	t.Parallel()
	var logs syncbuf.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	addr := startServer(t, maincontrol.Config{Logger: logger, Core: core.Config{Token: testToken}})
	p := dialRaw(t, addr)
	p.send("hello", "req", "h", "auth", "wrong")
	p.expectErrorClose(wire.CodeAuthFailed, "h")
	local := p.c.LocalAddr().String()
	require.Eventually(t, func() bool { return strings.Contains(logs.String(), "authentication failed") }, 5*time.Second, 10*time.Millisecond)
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, "authentication failed") {
			assert.Contains(t, line, "remote="+local)
		}
	}
}
