// Package addrlist holds the main control addresses a client or an
// executor is configured with, and the one rule for a leader hint. A
// cluster follower's `not_leader` (protocol section 8.13) may name the
// leader. A peer follows it only to an address of its own list. So a
// rogue or stale server cannot steer executors, and their tasks, to a
// host the operator never named.
package addrlist

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// List is an ordered set of host:port addresses, matched exactly as
// configured. The zero List is empty.
type List struct{ addrs []string }

// New returns the list of addrs in order, without empties and repeats.
func New(addrs ...string) List {
	var l List
	for _, a := range addrs {
		if a != "" && !slices.Contains(l.addrs, a) {
			l.addrs = append(l.addrs, a)
		}
	}
	return l
}

// Parse reads a comma-separated list, as flags give it. Spaces around
// each address are dropped. An empty entry or a repeat is an error, as
// it is likely a typo.
func Parse(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, errors.New("empty: want host:port, or a comma-separated list of them")
	}
	var out []string
	for a := range strings.SplitSeq(s, ",") {
		a = strings.TrimSpace(a)
		switch {
		case a == "":
			return nil, fmt.Errorf("%q has an empty address", s)
		case slices.Contains(out, a):
			return nil, fmt.Errorf("%q names %s twice", s, a)
		}
		out = append(out, a)
	}
	return out, nil
}

// Len is the number of addresses.
func (l List) Len() int { return len(l.addrs) }

// All returns a copy of the addresses, in order.
func (l List) All() []string { return slices.Clone(l.addrs) }

// First is the first address, or "" for an empty list.
func (l List) First() string {
	if len(l.addrs) == 0 {
		return ""
	}
	return l.addrs[0]
}

// Has reports whether addr is in the list, exactly as configured.
func (l List) Has(addr string) bool { return slices.Contains(l.addrs, addr) }

// After returns the address after addr, wrapping around. It returns the
// first when addr is not in the list.
func (l List) After(addr string) string {
	i := slices.Index(l.addrs, addr)
	if i < 0 {
		return l.First()
	}
	return l.addrs[(i+1)%len(l.addrs)]
}

// From returns every address once, starting at first and going round.
// A first not in the list is ignored.
func (l List) From(first string) []string {
	i := max(slices.Index(l.addrs, first), 0)
	return append(slices.Clone(l.addrs[i:]), l.addrs[:i]...)
}

// String joins the addresses with commas, as flags take them.
func (l List) String() string { return strings.Join(l.addrs, ",") }

// Hint is what to do with a follower's leader hint.
type Hint int

const (
	NoHint  Hint = iota // none given: try the next address
	Follow              // in the list: go there now
	Outside             // not in the list: ignore it, and log it
)

// Judge says whether hint may be followed.
func (l List) Judge(hint string) Hint {
	switch {
	case hint == "":
		return NoHint
	case l.Has(hint):
		return Follow
	}
	return Outside
}
