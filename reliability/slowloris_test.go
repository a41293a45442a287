package reliability_test

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestConn_Slowloris holds connections open slowly: silent after the
// welcome, half a hello, a hello dripped one byte at a time, a welcome
// never read. The main control must close each of them at the handshake
// timeout, without an error frame, while answering a well-behaved client
// within probeLimit. Registered clients that leave half a frame hanging
// are kept for the attack's few seconds (they are cut off only after 30 s
// without progress), and must not disturb anyone either.
func TestConn_Slowloris(t *testing.T) {
	if testing.Short() {
		t.Skip("floods take a while")
	}
	sc := currentScale()
	fig := figures.add(6, "slowloris: handshakes never finished, half frames, dripped bytes", "slow connections")
	const hsTimeout = time.Second
	mc := startMain(t, t.TempDir(), "--handshake-timeout", hsTimeout.String())
	pid := mc.Cmd.Process.Pid
	bg := startBackground(mc.Addr, newLedger(), "slow")
	var during probeStats
	var longestClose atomic.Int64
	var kept atomic.Int64
	figureRSS(t, fig, pid, func() {
		stopProbes := during.run(mc.Addr, nil)
		defer stopProbes()
		var wg sync.WaitGroup
		var mu sync.Mutex
		var errs []error
		fail := func(err error) {
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
		}
		// Registered clients first (their hello must beat the handshake
		// timeout), each leaving half a submit behind.
		idle := make([]*peer, sc.slowloris)
		parallel(sc.slowloris, 32, func(i int) {
			p, err := halfFrameClient(mc.Addr)
			if err != nil {
				fail(fmt.Errorf("registered client with half a frame: %w", err))
				return
			}
			idle[i] = p
		})
		for kind := 0; kind < 4; kind++ {
			for i := 0; i < sc.slowloris; i++ {
				time.Sleep(time.Millisecond) // 1,000 new slow peers a second, not a SYN flood
				wg.Add(1)
				go func() {
					defer wg.Done()
					d, err := slowPeer(mc.Addr, kind, hsTimeout)
					if err != nil {
						fail(fmt.Errorf("slow peer kind %d: %w", kind, err))
						return
					}
					for old := longestClose.Load(); int64(d) > old && !longestClose.CompareAndSwap(old, int64(d)); old = longestClose.Load() {
					}
				}()
			}
		}
		wg.Wait()
		for _, p := range idle { // all of the attack later: still open
			if p == nil {
				continue
			}
			if got, err := p.waitClosed(time.Millisecond); err == nil {
				fail(fmt.Errorf("a registered client with half a frame was closed (%v)", got))
			} else {
				kept.Add(1)
			}
			p.close()
		}
		fig.injected = 5 * sc.slowloris
		for i, err := range errs {
			if i < 10 {
				t.Error(err)
			}
		}
	})
	bg.settle(t, mc.Addr, fig)
	fig.note("handshake timeout %v: the slowest stalled handshake was closed after %s; %d registered clients holding half a frame were kept (for 30 s after their last byte). Probes during the attack: %s",
		hsTimeout, ms(time.Duration(longestClose.Load())), kept.Load(), during.String())
}

// halfFrameClient says hello, then sends half a submit and nothing more.
func halfFrameClient(addr string) (*peer, error) {
	p, err := dialClient(addr, nil)
	if err != nil {
		return nil, err
	}
	sub := frameOf("submit", "req", "s", "task_type", "slow")
	if _, err := p.conn.Write(sub[:len(sub)/2]); err != nil {
		p.close()
		return nil, err
	}
	return p, nil
}

// slowPeer plays one slow peer of kind 0 to 3 and returns how long after
// connecting the main control closed it.
func slowPeer(addr string, kind int, hsTimeout time.Duration) (time.Duration, error) {
	start := time.Now()
	if kind == 3 { // never reads the welcome, sends nothing
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			return 0, err
		}
		defer c.Close()
		_ = c.SetReadDeadline(time.Now().Add(hsTimeout + 5*time.Second))
		// Read only after the timeout: the welcome, then EOF.
		time.Sleep(hsTimeout)
		buf := make([]byte, 4096)
		for {
			if _, err := c.Read(buf); err != nil {
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					return 0, errors.New("still open 5 s after the handshake timeout")
				}
				return time.Since(start), nil
			}
		}
	}
	p, err := dialPeer(addr)
	if err != nil {
		return 0, err
	}
	defer p.close()
	hello := frameOf("hello", "req", "slow", "client", "slowloris")
	switch kind {
	case 1: // half a hello
		if _, err := p.conn.Write(hello[:len(hello)/2]); err != nil {
			return 0, err
		}
	case 2: // a hello dripped a byte every 150 ms: it would take seconds
		go func() {
			for _, b := range hello {
				if _, err := p.conn.Write([]byte{b}); err != nil {
					return
				}
				time.Sleep(150 * time.Millisecond)
			}
		}()
	}
	got, err := p.waitClosed(hsTimeout + 5*time.Second)
	if err != nil {
		return 0, errors.New("still open 5 s after the handshake timeout")
	}
	if len(got) > 0 {
		return 0, fmt.Errorf("closed with %v; want a close without an error frame", got[0])
	}
	return time.Since(start), nil
}
