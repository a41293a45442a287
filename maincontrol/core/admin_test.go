package core

import (
	"strings"
	"testing"

	"github.com/apollo11/apollo11/auth"
	"github.com/apollo11/apollo11/wire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Tests of protocol sections 8.1 (features) and 8.2 (the admin token).

const testNonce = "0123456789abcdef0123456789abcdef"

func TestAdmin_WelcomeListsFeatures(t *testing.T) {
	h := newHarness(t)
	h.c.Open(1)
	w := h.expect(1, "welcome")
	require.True(t, w.Has("features"), "every welcome lists its groups: %s", w)
	got, err := w.List("features")
	require.NoError(t, err)
	assert.Equal(t, features, append([]string{}, got...))
	parsed, err := wire.ParseWelcome(w)
	require.NoError(t, err)
	for _, f := range features {
		assert.True(t, parsed.HasFeature(f))
	}
	assert.False(t, parsed.HasFeature("no-such-group"))
}

func TestAdmin_HelloProof(t *testing.T) {
	admin := []byte("admin-secret")
	good := auth.Sign(admin, testNonce)
	withAdmin := func(c *Config) { c.AdminToken = admin }
	for name, mac := range map[string]string{
		"wrong":        auth.Sign([]byte("other"), testNonce),
		"upper case":   strings.ToUpper(good),
		"empty":        "",
		"the token":    string(admin),
		"shared token": auth.Sign([]byte("shared"), testNonce),
	} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, withAdmin)
			p := h.open()
			h.send(p, "hello", "req", "h", "admin_auth", mac)
			e := h.expectErr(p, wire.CodeAuthFailed)
			assert.Equal(t, "h", e.Value("req"))
			assert.True(t, h.fx.closed[p], "a wrong admin proof closes")
		})
	}
	t.Run("right", func(t *testing.T) {
		h := newHarness(t, withAdmin)
		p := h.open()
		h.send(p, "hello", "req", "h", "admin_auth", good, "client", "ops")
		ok := h.expect(p, "hello_ok")
		assert.Equal(t, "true", ok.Value("admin"))
		assert.True(t, h.c.peers[p].admin)
		assert.Equal(t, "ops", h.c.peers[p].name)
	})
	t.Run("absent", func(t *testing.T) {
		h := newHarness(t, withAdmin)
		p := h.open()
		h.send(p, "hello", "req", "h")
		ok := h.expect(p, "hello_ok")
		assert.False(t, ok.Has("admin"), "no admin=true without the proof")
		assert.False(t, h.c.peers[p].admin)
	})
	t.Run("no admin token", func(t *testing.T) {
		h := newHarness(t)
		p := h.open()
		h.send(p, "hello", "req", "h", "admin_auth", "garbage")
		ok := h.expect(p, "hello_ok")
		assert.Equal(t, "true", ok.Value("admin"), "without --admin-token-file every client may")
	})
	t.Run("shared token checked first", func(t *testing.T) {
		h := newHarness(t, withAdmin, func(c *Config) { c.Token = []byte("shared") })
		p := h.open()
		h.send(p, "hello", "req", "h", "auth", "bad", "admin_auth", good)
		assert.Contains(t, h.expectErr(p, wire.CodeAuthFailed).Value("message"), "authentication failed")
		p = h.open()
		h.send(p, "hello", "req", "h", "auth", auth.Sign([]byte("shared"), testNonce), "admin_auth", good)
		assert.Equal(t, "true", h.expect(p, "hello_ok").Value("admin"))
	})
	t.Run("executor ignores it", func(t *testing.T) {
		h := newHarness(t, withAdmin)
		p := h.open()
		h.send(p, "register", "executor_id", "e", "task_types", "x", "admin_auth", "bad")
		h.expect(p, "registered")
	})
}

func TestAdmin_RequireAdmin(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.AdminToken = []byte("admin-secret") })
	plain := h.client()
	proven := h.open()
	h.send(proven, "hello", "req", "h", "admin_auth", auth.Sign([]byte("admin-secret"), testNonce))
	h.expect(proven, "hello_ok")

	m := msg("requeue", "req", "r1", "task_id", "1")
	assert.False(t, h.c.requireAdmin(h.c.peers[plain], m, "r1"))
	e := h.expectErr(plain, wire.CodeNotPermitted)
	assert.Equal(t, "r1", e.Value("req"))
	assert.Contains(t, e.Value("message"), "admin_auth")
	assert.False(t, h.fx.closed[plain], "the connection stays open")

	assert.True(t, h.c.requireAdmin(h.c.peers[proven], m, "r1"))
	h.none(proven)
}

func TestAdmin_ConfigChecks(t *testing.T) {
	_, err := New(Config{AdminToken: []byte{}}, newRecorder())
	assert.ErrorIs(t, err, ErrConfig)
	_, err = New(Config{Token: []byte("same"), AdminToken: []byte("same")}, newRecorder())
	assert.ErrorIs(t, err, ErrConfig)
	assert.ErrorContains(t, err, "admin token")
}
