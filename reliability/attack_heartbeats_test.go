package reliability_test

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestAttack_HeartbeatAmplification: ten executors that never read send
// heartbeats listing 48,000 dispatches the main control never made, each
// of which it answers with a cancel. What it queues for them must stay
// bounded, and serving them must not stall anyone else.
func TestAttack_HeartbeatAmplification(t *testing.T) {
	const executors, listed = 10, 48_000
	r := startAttack(t, 3, "heartbeats listing unknown dispatches, from executors that never read", nil, witnessKind{})
	tokens := make([]string, listed)
	for i := range tokens {
		tokens[i] = strconv.Itoa(1_000_000_000+i) + ".1"
	}
	hb := frameOf("heartbeat", "seq", "1", "running", strings.Join(tokens, ","))
	var beats, conns atomic.Int64
	var wg sync.WaitGroup
	for e := 0; e < executors; e++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; time.Now().Before(r.until); n++ {
				conns.Add(1)
				beats.Add(int64(heartbeatFlood(r.addr, "amp-"+strconv.Itoa(e)+"-"+strconv.Itoa(n), hb, r.until)))
			}
		}()
	}
	wg.Wait()
	r.finish(fmt.Sprintf("%s heartbeats listing %s unknown dispatches each, from %d executors over %d connections",
		thousands(int(beats.Load())), thousands(listed), executors, conns.Load()))
}

// heartbeatFlood registers an executor and sends hb until until, or until
// the main control stops taking it; it never reads. It returns the
// heartbeats sent.
func heartbeatFlood(addr, id string, hb []byte, until time.Time) int {
	p, _, err := dialExecutor(addr, id, "attack-none", 1, nil)
	if err != nil {
		time.Sleep(50 * time.Millisecond)
		return 0
	}
	defer p.close()
	_ = p.conn.SetWriteDeadline(until)
	n := 0
	for time.Now().Before(until) {
		if _, err := p.conn.Write(hb); err != nil {
			break
		}
		n++
	}
	return n
}
