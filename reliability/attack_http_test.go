package reliability_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apollo11/apollo11/internal/testbin"
)

// TestAttack_HTTPLockout: 48 peers hold idle keep-alive connections to
// --http-listen (each made one request, then sits), and come back when
// closed. Meanwhile a probe GETs /healthz on a new connection, one at a
// time, as an orchestrator would: every probe must be answered, or a
// healthy service would be restarted.
func TestAttack_HTTPLockout(t *testing.T) {
	const idlers = 48
	httpAddr := testbin.FreeAddr(t)
	r := startAttack(t, 5, "idle keep-alive connections to --http-listen", nil,
		witnessKind{healthz: "http://" + httpAddr + "/healthz"}, "--http-listen", httpAddr)
	// Long enough for probes to time out in a row while the connections
	// are held.
	r.until = r.row.start.Add(max(attackFor(), 2*witnessTries*healthzTimeout))
	var held, failed atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < idlers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(r.until) {
				if holdIdleHTTP(httpAddr, r.until) {
					held.Add(1)
				} else {
					failed.Add(1)
					time.Sleep(20 * time.Millisecond)
				}
			}
		}()
	}
	wg.Wait()
	r.finish(fmt.Sprintf("%d idle keep-alive connections at once (%s made, %s failed)", idlers,
		thousands(int(held.Load())), thousands(int(failed.Load()))))
	r.requireWitnessServed()
}

// holdIdleHTTP makes one keep-alive request for /metrics and then holds
// the connection idle until until or until the server closes it. It
// reports whether the request was answered.
func holdIdleHTTP(addr string, until time.Time) bool {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetDeadline(until)
	if _, err := fmt.Fprintf(c, "GET /metrics HTTP/1.1\r\nHost: %s\r\nConnection: keep-alive\r\n\r\n", addr); err != nil {
		return false
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return false
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil {
		return false
	}
	_, _ = br.ReadByte() // idle: until the server closes it, or until
	return true
}
