package reliability_test

import (
	"crypto/rand"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestAttack_UnauthenticatedCrowding: with --token-file, peers without
// the token open more connections than --max-conns allows and never say
// hello, coming back as soon as they are closed. Meanwhile token holders
// connect afresh, one at a time: every one must be served, since a peer
// that cannot authenticate must not crowd out those that can.
func TestAttack_UnauthenticatedCrowding(t *testing.T) {
	const maxConns = 256
	const attackers = maxConns + 64
	token := []byte("attacks-" + rand.Text())
	r := startAttack(t, 6, "unauthenticated connections filling --max-conns, token holders connecting", token,
		witnessKind{fresh: true}, "--max-conns", strconv.Itoa(maxConns))
	var opened, refused atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < attackers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(r.until) {
				if holdUnauthenticated(r.addr, r.until) {
					opened.Add(1)
				} else {
					refused.Add(1)
					time.Sleep(5 * time.Millisecond)
				}
			}
		}()
	}
	wg.Wait()
	r.finish(fmt.Sprintf("%d unauthenticated peers at once under --max-conns %d (%s connections welcomed, %s refused)",
		attackers, maxConns, thousands(int(opened.Load())), thousands(int(refused.Load()))))
	r.requireWitnessServed()
}

// holdUnauthenticated connects, reads the first frame and, if it is a
// welcome, holds the connection silent until until or until the main
// control closes it. It reports whether the connection was welcomed.
func holdUnauthenticated(addr string, until time.Time) bool {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetReadDeadline(until)
	buf := make([]byte, 512)
	n, err := c.Read(buf)
	if err != nil || n < 16 || string(buf[4:16]) != "type=welcome" {
		return false
	}
	for {
		if _, err := c.Read(buf); err != nil {
			return true
		}
	}
}
