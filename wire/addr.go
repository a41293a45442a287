package wire

import (
	"fmt"
	"net"
	"strings"
)

// CheckDialAddr reports why addr is not a main control address a peer can
// dial, or nil. Wire v1 runs on TCP only. A scheme such as unix:// or
// tcp://, or a port outside 1-65535, would fail every attempt. A peer that
// reconnects would then retry for ever. The error names the reason but not
// the setting, which callers add.
func CheckDialAddr(addr string) error {
	if addr == "" {
		return fmt.Errorf("empty: want host:port")
	}
	if scheme, _, ok := strings.Cut(addr, "://"); ok {
		return fmt.Errorf("want host:port, no scheme (%s:// is not dialled: wire v1 runs on TCP only)", scheme)
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("want host:port (%s)", strings.TrimPrefix(err.Error(), "address "+addr+": "))
	}
	if n, err := net.LookupPort("tcp", port); err != nil || n == 0 {
		return fmt.Errorf("port %q is not a number from 1 to 65535", port)
	}
	return nil
}
