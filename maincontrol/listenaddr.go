package maincontrol

import (
	"fmt"
	"net"
	"strings"
)

// checkListen refuses a listen address that cannot work, before the data
// dir is opened. A typo in --listen must not wait out a long recovery to
// be reported, nor look like a failure to bind. what names the setting in
// the error. withScheme allows the tcp://, tcp4:// and tcp6:// forms of
// the main port, kept from when gnet listened on it. listen in accept.go
// maps them to networks. The HTTP listener takes host:port only.
// unix:///path is refused. Wire v1 runs on TCP, and no apollo11 client or
// executor can dial a socket path. A daemon listening there would be
// ready and unreachable.
func checkListen(what, listen string, withScheme bool) error {
	bad := func(why string) error {
		want := "host:port"
		if withScheme {
			want = "host:port or tcp://host:port"
		}
		return fmt.Errorf("%w: %s %q: %s (want %s)", ErrConfig, what, listen, why, want)
	}
	addr := listen
	if scheme, rest, ok := strings.Cut(listen, "://"); ok {
		if !withScheme {
			return bad("no scheme is taken here")
		}
		switch scheme {
		case "tcp", "tcp4", "tcp6":
			addr = rest
		default:
			// unix:// too: see above.
			return bad("scheme " + scheme + " is not served (wire v1 runs on TCP only)")
		}
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return bad(strings.TrimPrefix(err.Error(), "address "+addr+": "))
	}
	if _, err := net.LookupPort("tcp", port); err != nil || port == "" {
		return bad(fmt.Sprintf("port %q is not a number from 0 to 65535", port))
	}
	return nil
}
