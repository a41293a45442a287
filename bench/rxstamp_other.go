//go:build !linux

package bench

import (
	"net"
	"time"
)

// rxStamper needs Linux's SO_TIMESTAMPNS. Elsewhere there is none.
// There, arrival is taken when the harness reads.
type rxStamper struct{}

func newRxStamper(net.Conn) *rxStamper { return nil }

func (*rxStamper) read([]byte) (int, time.Time, error) { panic("unreachable: newRxStamper gives nil") }
