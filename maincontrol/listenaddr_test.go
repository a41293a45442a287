package maincontrol

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCheckListen(t *testing.T) {
	tests := []struct {
		listen     string
		withScheme bool
		bad        string // "" when the address is taken
	}{
		{"127.0.0.1:1969", true, ""},
		{":0", true, ""},
		{"[::1]:1969", true, ""},
		{"localhost:1969", true, ""},
		{"tcp://127.0.0.1:1969", true, ""},
		{"tcp6://[::1]:1969", true, ""},
		{"127.0.0.1:1969", false, ""},
		{"nonsense", true, "missing port in address"},
		{"127.0.0.1:", true, `port "" is not`},
		{"127.0.0.1:70000", true, `port "70000" is not`},
		{"127.0.0.1:-1", true, `port "-1" is not`},
		{"udp://127.0.0.1:1969", true, "scheme udp is not served"},
		{"unix:///run/a11.sock", true, "scheme unix is not served (wire v1 runs on TCP only) (want host:port or tcp://host:port)"},
		{"unix://", true, "scheme unix is not served"},
		{"tcp://127.0.0.1:1969", false, "no scheme is taken here"},
		{"1.2.3.4:5:6", true, "too many colons"},
	}
	for _, tc := range tests {
		err := checkListen("listen address", tc.listen, tc.withScheme)
		if tc.bad == "" {
			assert.NoError(t, err, tc.listen)
			continue
		}
		require.ErrorIs(t, err, ErrConfig, tc.listen)
		assert.Contains(t, err.Error(), tc.bad, tc.listen)
		assert.Contains(t, err.Error(), `listen address "`+tc.listen+`"`, tc.listen)
	}
}

// gnet quietly runs at most MaxEventLoops: more is a configuration error,
// for the library's users as for the command line.
func TestConfig_EventLoopsBound(t *testing.T) {
	for loops, bad := range map[int]bool{1: false, MaxEventLoops: false, MaxEventLoops + 1: true, 100000: true} {
		_, err := Config{EventLoops: loops}.withDefaults()
		if !bad {
			assert.NoError(t, err, loops)
			continue
		}
		require.ErrorIs(t, err, ErrConfig, loops)
		assert.Contains(t, err.Error(), "want 1 to 256", loops)
	}
}
