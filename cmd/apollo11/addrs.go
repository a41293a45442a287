package main

import (
	"errors"
	"fmt"
	"net"
	"strings"
)

// checkDialAddr refuses, before anything starts, a main control address
// (--connect, --addr) that cannot be dialled: wire v1 runs on TCP, so a
// scheme (unix:///path, tcp://) or a port outside 1-65535 would only fail
// every attempt, and the executor would retry for ever.
func checkDialAddr(flagName, addr string) error {
	if addr == "" {
		return fmt.Errorf("--%s is empty: want host:port", flagName)
	}
	if scheme, _, ok := strings.Cut(addr, "://"); ok {
		return fmt.Errorf("--%s %q: want host:port, no scheme (%s:// is not dialled: wire v1 runs on TCP only)", flagName, addr, scheme)
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--%s %q: want host:port (%s)", flagName, addr, strings.TrimPrefix(err.Error(), "address "+addr+": "))
	}
	if n, err := net.LookupPort("tcp", port); err != nil || n == 0 {
		return fmt.Errorf("--%s %q: port %q is not a number from 1 to 65535", flagName, addr, port)
	}
	return nil
}

// checkListenFlag refuses an empty --listen, which the main control's
// Config reads as its default (127.0.0.1:1969): an empty value on the
// command line or in APOLLO11_LISTEN is a mistake, not a request for the
// default. The rest of the address is checked by the main control.
func checkListenFlag(listen string) error {
	if listen == "" {
		return errors.New(`--listen is empty: want host:port (the default is 127.0.0.1:1969)`)
	}
	return nil
}

// dialAddr is the host:port to dial for a --listen address: without the
// tcp://, tcp4:// or tcp6:// prefix the main control also takes.
func dialAddr(listen string) string {
	for _, scheme := range []string{"tcp://", "tcp4://", "tcp6://"} {
		if rest, ok := strings.CutPrefix(listen, scheme); ok {
			return rest
		}
	}
	return listen
}
