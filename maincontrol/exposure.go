package maincontrol

import (
	"net"
	"strings"
)

// beyondLoopback reports whether a listen address accepts connections
// from other hosts. It is host:port, or a gnet URL such as tcp://host:port.
// An empty host or an unspecified address (0.0.0.0, ::) listens everywhere.
// A name other than localhost may resolve to anything, so it counts too.
// Unix sockets are local.
func beyondLoopback(listen string) bool {
	if scheme, rest, ok := strings.Cut(listen, "://"); ok {
		if strings.HasPrefix(scheme, "unix") {
			return false
		}
		listen = rest
	}
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return true // not ours to judge; gnet refuses it anyway
	}
	if host == "localhost" {
		return false
	}
	ip := net.ParseIP(host)
	return ip == nil || !ip.IsLoopback()
}
