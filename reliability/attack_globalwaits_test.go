package reliability_test

import (
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestAttack_GlobalWaits: 32 connections each hold as many waits as one
// connection may on one keyed task of a type no executor serves, and do
// not read; then the task is cancelled, which ends every wait at once.
// The waits of all connections together must be bounded, and ending them
// must neither stall the main control nor take it past MemoryMax.
func TestAttack_GlobalWaits(t *testing.T) {
	const conns = 32
	perConn := 65_536 // as many as one connection may hold
	if raceEnabled && !*soak {
		perConn = 8_192 // the harness, instrumented, is the bottleneck
	}
	r := startAttack(t, 2, "waits held by many connections on one task, then the task ended", nil, witnessKind{})
	var sent, failed atomic.Int64
	var lastErr atomic.Value
	rounds := 0
	for rounds == 0 || time.Now().Before(r.until) {
		rounds++
		key := "global-" + strconv.Itoa(rounds)
		id, err := keyedTask(r.addr, r.token, key)
		if err != nil {
			t.Fatal(err)
		}
		flood := repeated(perConn, "submit", "req", "g", "task_type", "attack-none", "key", key, "wait", "true")
		deadline := r.until.Add(20 * time.Second)
		holders := make([]*peer, conns)
		var wg sync.WaitGroup
		for c := range holders {
			wg.Add(1)
			go func() {
				defer wg.Done()
				p, err := holdWaits(r.addr, flood, deadline)
				if err != nil {
					failed.Add(1)
					lastErr.Store(err.Error())
					return
				}
				holders[c] = p
				sent.Add(int64(perConn))
			}()
		}
		wg.Wait()
		// End the task: every wait on it is answered at once, to peers
		// that do not read.
		if err := cancelTask(r.addr, r.token, id); err != nil {
			t.Logf("cancel of the waited task: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
		for _, p := range holders {
			if p != nil {
				p.close()
			}
		}
	}
	if n := failed.Load(); n > 0 {
		t.Logf("%d attacking connections failed: %v", n, lastErr.Load())
	}
	r.finish(fmt.Sprintf("%d rounds of %d connections x %s wait=true submits (%s taken; %d connections cut off)", rounds, conns,
		thousands(perConn), thousands(int(sent.Load())), failed.Load()))
}

// holdWaits sends the flood on a new client connection, reads until the
// main control has taken it (the reply to a stats behind it) and returns
// the connection, which the caller holds without reading.
func holdWaits(addr string, flood []byte, deadline time.Time) (*peer, error) {
	p, err := dialClient(addr, nil)
	if err != nil {
		return nil, err
	}
	_ = p.conn.SetWriteDeadline(deadline)
	if _, err := p.conn.Write(flood); err == nil {
		err = p.send("stats", "req", "end")
	}
	if err == nil {
		err = drainUntil(p, "end", deadline)
	}
	if err != nil {
		p.close()
		return nil, err
	}
	return p, nil
}

// cancelTask cancels a task and waits for the answer.
func cancelTask(addr string, token []byte, id uint64) error {
	p, err := dialClient(addr, token)
	if err != nil {
		return err
	}
	defer p.close()
	if err := p.send("cancel", "req", "c", "task_id", itoa(id)); err != nil {
		return err
	}
	m, err := p.recv(30 * time.Second)
	if err != nil {
		return err
	}
	if m.Type() != "cancelled" {
		return fmt.Errorf("cancel: %s", m)
	}
	return nil
}
