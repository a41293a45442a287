package maincontrol

import (
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
)

// The dashboard dials the main port on loopback when it listens on every
// address, and on the address itself otherwise.
func TestLoopbackAddr(t *testing.T) {
	for _, c := range []struct {
		ip   net.IP
		want string
	}{
		{net.IPv4zero, "127.0.0.1:1969"},
		{nil, "127.0.0.1:1969"},
		{net.IPv6unspecified, "[::1]:1969"},
		{net.ParseIP("192.0.2.4"), "192.0.2.4:1969"},
		{net.ParseIP("::1"), "[::1]:1969"},
	} {
		assert.Equal(t, c.want, loopbackAddr(&net.TCPAddr{IP: c.ip, Port: 1969}), "%v", c.ip)
	}
}
