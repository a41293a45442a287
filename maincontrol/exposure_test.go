package maincontrol

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestBeyondLoopback(t *testing.T) {
	for listen, want := range map[string]bool{
		"127.0.0.1:1969":       false,
		"127.0.0.2:1969":       false,
		"[::1]:1969":           false,
		"localhost:1969":       false,
		"tcp://127.0.0.1:1969": false,
		"unix:///run/a11.sock": false,
		":1969":                true,
		"0.0.0.0:1969":         true,
		"[::]:1969":            true,
		"10.1.2.3:1969":        true,
		"tcp4://0.0.0.0:1969":  true,
		"mc.example:1969":      true,
		"no-port":              true,
	} {
		assert.Equal(t, want, beyondLoopback(listen), listen)
	}
}
