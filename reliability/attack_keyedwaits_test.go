package reliability_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestAttack_KeyedWaitFlood: one keyed task of a type no executor serves;
// four connections each send 65,536 submit wait=true with its key, then
// close, round after round. Every wait is on the same task, so the main
// control must neither hold them twice over nor pay for the others' waits
// when one connection closes.
func TestAttack_KeyedWaitFlood(t *testing.T) {
	const conns, perConn = 4, 65_536
	r := startAttack(t, 1, "keyed-submit wait flood", nil, witnessKind{})
	if _, err := keyedTask(r.addr, r.token, "flood"); err != nil {
		t.Fatal(err)
	}
	flood := repeated(perConn, "submit", "req", "f", "task_type", "attack-none", "key", "flood", "wait", "true")
	var sent, failed atomic.Int64
	var lastErr atomic.Value
	rounds := 0
	for rounds == 0 || time.Now().Before(r.until) {
		rounds++
		var wg sync.WaitGroup
		for c := 0; c < conns; c++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := waitFlood(r.addr, flood, r.until.Add(20*time.Second)); err != nil {
					failed.Add(1)
					lastErr.Store(err.Error())
					return
				}
				sent.Add(perConn)
			}()
		}
		wg.Wait()
	}
	if n := failed.Load(); n > 0 {
		t.Logf("%d attacking connections failed: %v", n, lastErr.Load())
	}
	r.finish(fmt.Sprintf("%d rounds of %d connections x %s submits (%s taken; %d connections cut off)", rounds, conns,
		thousands(perConn), thousands(int(sent.Load())), failed.Load()))
}

// waitFlood sends the flood on a new client connection, waits until the
// main control has read it (the reply to a stats behind it), and closes.
func waitFlood(addr string, flood []byte, deadline time.Time) error {
	p, err := dialClient(addr, nil)
	if err != nil {
		return err
	}
	defer p.close()
	_ = p.conn.SetWriteDeadline(deadline)
	if _, err := p.conn.Write(flood); err != nil {
		return err
	}
	if err := p.send("stats", "req", "end"); err != nil {
		return err
	}
	return drainUntil(p, "end", deadline)
}
