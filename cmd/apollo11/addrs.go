package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/apollo11/apollo11/internal/addrlist"
	"github.com/apollo11/apollo11/wire"
)

// checkDialAddr refuses a main control address (--connect, --addr) that
// cannot be dialled (wire.CheckDialAddr), before anything starts. The
// error names the flag.
func checkDialAddr(flagName, addr string) error {
	if addr == "" {
		return fmt.Errorf("--%s is empty: want host:port", flagName)
	}
	if err := wire.CheckDialAddr(addr); err != nil {
		return fmt.Errorf("--%s %q: %w", flagName, addr, err)
	}
	return nil
}

// dialAddrs reads --connect or --addr: one main control address, or a
// cluster's members, comma-separated. Each is checked as checkDialAddr
// does. A peer follows a leader only to an address of this list.
func dialAddrs(flagName, value string) ([]string, error) {
	if value == "" {
		return nil, checkDialAddr(flagName, value)
	}
	addrs, err := addrlist.Parse(value)
	if err != nil {
		return nil, fmt.Errorf("--%s %w", flagName, err)
	}
	for _, a := range addrs {
		if err := checkDialAddr(flagName, a); err != nil {
			return nil, err
		}
	}
	return addrs, nil
}

// checkListenFlag refuses an empty --listen, which the main control's
// Config reads as its default (127.0.0.1:1969). An empty value on the
// command line or in APOLLO11_LISTEN is a mistake, not a request for the
// default. The main control checks the rest of the address.
func checkListenFlag(listen string) error {
	if listen == "" {
		return errors.New(`--listen is empty: want host:port (the default is 127.0.0.1:1969)`)
	}
	return nil
}

// dialAddr is the host:port to dial for a --listen address. It drops the
// tcp://, tcp4:// or tcp6:// prefix the main control also takes.
func dialAddr(listen string) string {
	for _, scheme := range []string{"tcp://", "tcp4://", "tcp6://"} {
		if rest, ok := strings.CutPrefix(listen, scheme); ok {
			return rest
		}
	}
	return listen
}
