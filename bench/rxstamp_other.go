//go:build !linux

package bench

import (
	"net"
	"time"
)

// rxStamper needs Linux's SO_TIMESTAMPNS; elsewhere there is none and
// arrival is taken when the harness reads.
type rxStamper struct{}

func newRxStamper(net.Conn) *rxStamper { return nil }

func (*rxStamper) read([]byte) (int, time.Time, error) { panic("unreachable: newRxStamper gives nil") }
