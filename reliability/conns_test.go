package reliability_test

import (
	"net"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

// TestConn_OpenAndDrop10k opens connections and drops them in every
// phase (before the welcome, after it, after hello, after register, in
// the middle of a frame with an RST), 100 at a time, while a well-behaved
// client keeps probing. Afterwards the main control must hold no
// connection of theirs and its memory must be back near its baseline.
func TestConn_OpenAndDrop10k(t *testing.T) {
	if testing.Short() {
		t.Skip("floods take a while")
	}
	sc := currentScale()
	fig := figures.add(7, "connections opened and dropped", "connections")
	mc := startMain(t, t.TempDir())
	pid := mc.Cmd.Process.Pid
	bg := startBackground(mc.Addr, newLedger(), "conns")
	var during probeStats
	var failed atomic.Int64
	start := time.Now()
	figureRSS(t, fig, pid, func() {
		stopProbes := during.run(mc.Addr, nil)
		defer stopProbes()
		parallel(sc.conns, 100, func(i int) {
			if err := openAndDrop(mc.Addr, i); err != nil {
				failed.Add(1)
			}
		})
	})
	took := time.Since(start)
	fig.injected = sc.conns
	if n := failed.Load(); n > 0 {
		t.Errorf("%d of %d connections could not be opened or got no welcome", n, sc.conns)
	}
	bg.settle(t, mc.Addr, fig)
	fig.note("%d connections in %s (%.0f/s). Probes during the flood: %s", sc.conns, took.Round(time.Millisecond),
		float64(sc.conns)/took.Seconds(), during.String())
}

// openAndDrop opens one connection and drops it; the phase depends on i.
func openAndDrop(addr string, i int) error {
	if i%5 == 0 { // before the welcome is read
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			return err
		}
		return c.Close()
	}
	p, err := dialPeer(addr)
	if err != nil {
		return err
	}
	switch i % 5 {
	case 1: // after the welcome
		p.close()
	case 2: // after hello
		_, err = p.handshake("hello", nil, "req", "h")
		p.close()
	case 3: // after register
		_, err = p.handshake("register", nil, "executor_id", "drop-"+strconv.Itoa(i), "task_types", "none")
		p.close()
	case 4: // half a hello, then RST
		hello := frameOf("hello", "req", "h")
		_, err = p.conn.Write(hello[:len(hello)/2])
		p.reset()
	}
	return err
}
