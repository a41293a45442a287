package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCheckDialAddr(t *testing.T) {
	for _, tc := range []struct {
		addr, err string // err "": accepted
	}{
		{"127.0.0.1:1969", ""},
		{"[::1]:1969", ""},
		{"mc.example:1969", ""},
		{":1969", ""},
		{"", "--connect is empty: want host:port"},
		{"unix:///tmp/a11.sock", `--connect "unix:///tmp/a11.sock": want host:port, no scheme (unix:// is not dialled: wire v1 runs on TCP only)`},
		{"tcp://127.0.0.1:1969", `(tcp:// is not dialled`},
		{"udp://127.0.0.1:1", `(udp:// is not dialled`},
		{"127.0.0.1:70000", `--connect "127.0.0.1:70000": port "70000" is not a number from 1 to 65535`},
		{"127.0.0.1:0", `port "0" is not a number from 1 to 65535`},
		{"127.0.0.1:", `port "" is not`},
		{"nonsense", `--connect "nonsense": want host:port (missing port in address)`},
	} {
		err := checkDialAddr("connect", tc.addr)
		if tc.err == "" {
			assert.NoError(t, err, tc.addr)
			continue
		}
		require.Error(t, err, tc.addr)
		assert.Contains(t, err.Error(), tc.err, tc.addr)
	}
}

// Addresses no apollo11 peer can use are bad command lines (exit 2),
// refused before anything listens or dials: --listen unix:///path was
// served (and suggested by the error text) though nothing could connect,
// and the executor retried --connect unix:///path or port 70000 for ever.
func TestAddressFlags_Refused(t *testing.T) {
	for _, tc := range []struct {
		args []string
		err  string
	}{
		{[]string{"maincontrol", "--data-dir", "", "--listen", "unix:///tmp/a11-test.sock"},
			`scheme unix is not served (wire v1 runs on TCP only) (want host:port or tcp://host:port)`},
		{[]string{"maincontrol", "--data-dir", "", "--listen", ""}, "--listen is empty"},
		{[]string{"dev", "--data-dir", "", "--listen", ""}, "--listen is empty"},
		{[]string{"executor", "--connect", "unix:///tmp/a11-test.sock"}, "wire v1 runs on TCP only"},
		{[]string{"executor", "--connect", "127.0.0.1:70000"}, `port "70000" is not a number from 1 to 65535`},
		{[]string{"executor", "--connect", ""}, "--connect is empty"},
		{[]string{"executor", "--connect", "udp://127.0.0.1:1"}, "udp:// is not dialled"},
		{[]string{"stats", "--addr", "unix:///tmp/a11-test.sock"}, "wire v1 runs on TCP only"},
		{[]string{"submit", "--addr", "", "--type", "echo"}, "--addr is empty"},
		{[]string{"pipeline", "run", "x.yaml", "--addr", "127.0.0.1:70000"}, `port "70000" is not`},
	} {
		var out, errOut bytes.Buffer
		rc := run(tc.args, &out, &errOut)
		assert.Equal(t, 2, rc, "%v: %s", tc.args, errOut.String())
		assert.Contains(t, errOut.String(), tc.err, "%v", tc.args)
	}
}

func TestDialAddr(t *testing.T) {
	for in, want := range map[string]string{
		"127.0.0.1:1969": "127.0.0.1:1969", "tcp://127.0.0.1:1969": "127.0.0.1:1969",
		"tcp6://[::1]:1969": "[::1]:1969", "tcp4://:1": ":1",
	} {
		assert.Equal(t, want, dialAddr(in), in)
		assert.NoError(t, checkDialAddr("addr", dialAddr(in)), in)
	}
}
