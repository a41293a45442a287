package executor_test

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/executor"
)

func TestNew(t *testing.T) {
	h := map[string]executor.Handler{"echo": echoHandler()}
	tests := []struct {
		name string
		cfg  executor.Config
		ok   bool
	}{
		{"minimal", executor.Config{ID: "w1", Handlers: h}, true},
		{"id with all allowed bytes", executor.Config{ID: "A-z_0.9:x", Handlers: h}, true},
		{"id of 128 bytes", executor.Config{ID: strings.Repeat("a", 128), Handlers: h}, true},
		{"id of 129 bytes", executor.Config{ID: strings.Repeat("a", 129), Handlers: h}, false},
		{"missing id", executor.Config{Handlers: h}, false},
		{"id with a space", executor.Config{ID: "a b", Handlers: h}, false},
		{"id with a slash", executor.Config{ID: "a/b", Handlers: h}, false},
		{"no handlers", executor.Config{ID: "w1"}, false},
		{"1,024 task types", executor.Config{ID: "w1", Handlers: manyHandlers(1024)}, true},
		{"1,025 task types", executor.Config{ID: "w1", Handlers: manyHandlers(1025)}, false},
		{"nil handler", executor.Config{ID: "w1", Handlers: map[string]executor.Handler{"x": nil}}, false},
		{"task type with comma", executor.Config{ID: "w1", Handlers: map[string]executor.Handler{"a,b": echoHandler()}}, false},
		{"task type with space", executor.Config{ID: "w1", Handlers: map[string]executor.Handler{"a b": echoHandler()}}, false},
		{"empty task type", executor.Config{ID: "w1", Handlers: map[string]executor.Handler{"": echoHandler()}}, false},
		{"task type with a newline", executor.Config{ID: "w1", Handlers: map[string]executor.Handler{"a\nb": echoHandler()}}, false},
		{"task type with a tab", executor.Config{ID: "w1", Handlers: map[string]executor.Handler{"a\tb": echoHandler()}}, false},
		{"task type in UTF-8", executor.Config{ID: "w1", Handlers: map[string]executor.Handler{"résumé": echoHandler()}}, true},
		{"addr without a port", executor.Config{ID: "w1", Handlers: h, Addr: "nonsense"}, false},
		{"addr host:port", executor.Config{ID: "w1", Handlers: h, Addr: "mc.example:1969"}, true},
		{"addr port above 65535", executor.Config{ID: "w1", Handlers: h, Addr: "127.0.0.1:70000"}, false},
		{"addr port 0", executor.Config{ID: "w1", Handlers: h, Addr: "127.0.0.1:0"}, false},
		{"addr unix socket (not TCP)", executor.Config{ID: "w1", Handlers: h, Addr: "unix:///run/a11.sock"}, false},
		{"any addr with a custom Dial", executor.Config{ID: "w1", Handlers: h, Addr: "unix-socket-name",
			Dial: func(context.Context, string) (net.Conn, error) { return nil, assert.AnError }}, true},
		{"slots 65536", executor.Config{ID: "w1", Handlers: h, Slots: 65536}, true},
		{"slots 65537", executor.Config{ID: "w1", Handlers: h, Slots: 65537}, false},
		{"negative slots", executor.Config{ID: "w1", Handlers: h, Slots: -1}, false},
		{"empty non-nil token", executor.Config{ID: "w1", Handlers: h, Token: []byte{}}, false},
		{"backoff max below min", executor.Config{ID: "w1", Handlers: h, BackoffMin: time.Second, BackoffMax: time.Millisecond}, false},
		{"negative drain timeout", executor.Config{ID: "w1", Handlers: h, DrainTimeout: -time.Second}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, err := executor.New(tc.cfg)
			if tc.ok {
				require.NoError(t, err)
				assert.NotNil(t, e)
				return
			}
			assert.ErrorIs(t, err, executor.ErrConfig)
		})
	}
}

func TestPermanent(t *testing.T) {
	base := assert.AnError
	p := executor.Permanent(base)
	assert.True(t, executor.IsPermanent(p))
	assert.ErrorIs(t, p, base, "Permanent keeps the chain")
	assert.Equal(t, base.Error(), p.Error())
	assert.True(t, executor.IsPermanent(wrap(p)), "found through wrapping")
	assert.False(t, executor.IsPermanent(base))
	assert.False(t, executor.IsPermanent(nil))
	assert.NoError(t, executor.Permanent(nil))
}

func manyHandlers(n int) map[string]executor.Handler {
	hs := make(map[string]executor.Handler, n)
	for i := range n {
		hs["t"+strconv.Itoa(i)] = echoHandler()
	}
	return hs
}
