package wire_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/apollo11/apollo11/wire"
)

func TestCheckDialAddr(t *testing.T) {
	for addr, want := range map[string]string{
		"127.0.0.1:1969":     "",
		"localhost:1969":     "",
		"[::1]:1969":         "",
		"":                   "empty: want host:port",
		"unix:///tmp/a.sock": "want host:port, no scheme (unix:// is not dialled: wire v1 runs on TCP only)",
		"tcp://h:1":          "want host:port, no scheme (tcp:// is not dialled: wire v1 runs on TCP only)",
		"nonsense":           "want host:port (missing port in address)",
		"h:70000":            `port "70000" is not a number from 1 to 65535`,
		"h:0":                `port "0" is not a number from 1 to 65535`,
	} {
		err := wire.CheckDialAddr(addr)
		if want == "" {
			assert.NoError(t, err, addr)
		} else if assert.Error(t, err, addr) {
			assert.Equal(t, want, err.Error(), addr)
		}
	}
}
