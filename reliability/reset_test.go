package reliability_test

import (
	"encoding/binary"
	"math/rand/v2"
	"net"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

// TestConn_ResetMidFrame resets connections (RST, not FIN) in the middle
// of frames, in every phase: before the welcome is read, in the middle of
// a hello, after pipelined submits with a frame cut in half, while
// replies are being written, and executors holding a started task in the
// middle of their result frame. A well-behaved producer and executor work
// throughout; nothing they were confirmed may be lost, the executors'
// tasks must be run again, and the connections and memory must be freed.
func TestConn_ResetMidFrame(t *testing.T) {
	if testing.Short() {
		t.Skip("floods take a while")
	}
	sc := currentScale()
	fig := figures.add(5, "connection resets in the middle of frames", "resets")
	mc := startMain(t, t.TempDir())
	pid := mc.Cmd.Process.Pid
	bg := startBackground(mc.Addr, newLedger(), "reset")
	var execTasks atomic.Int64
	var during probeStats
	figureRSS(t, fig, pid, func() {
		stopProbes := during.run(mc.Addr, nil)
		parallel(sc.resets, 16, func(i int) {
			rng := rand.New(rand.NewPCG(uint64(i), 1))
			if resetOne(mc.Addr, i, rng) {
				execTasks.Add(1)
			}
		})
		stopProbes()
	})
	fig.injected = sc.resets
	bg.settle(t, mc.Addr, fig)
	fig.note("%d resets were executors cut off in the middle of a result; their tasks were taken back and ended. Probes during the resets: %s", execTasks.Load(), during.String())
}

// resetOne opens one connection and resets it in the middle of a frame;
// the kind depends on i. It reports whether it reset an executor holding
// a task.
func resetOne(addr string, i int, rng *rand.Rand) bool {
	hello := frameOf("hello", "req", "h", "client", "reset")
	switch i % 6 {
	case 0: // before reading the welcome
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err == nil {
			(&peer{conn: c}).reset()
		}
		return false
	case 1: // in the middle of the hello
		p, err := dialPeer(addr)
		if err != nil {
			return false
		}
		_, _ = p.conn.Write(hello[:1+rng.IntN(len(hello)-1)])
		p.reset()
		return false
	case 2: // after pipelined submits, the last one cut
		p, err := dialClient(addr, nil)
		if err != nil {
			return false
		}
		var buf []byte
		for j := 0; j < 4; j++ {
			buf = append(buf, frameOf("submit", "req", strconv.Itoa(j), "task_type", "work", "arg.i", strconv.Itoa(i))...)
		}
		last := frameOf("submit", "req", "cut", "task_type", "work")
		buf = append(buf, last[:1+rng.IntN(len(last)-1)]...)
		_, _ = p.conn.Write(buf)
		p.reset()
		return false
	case 3: // while replies are written: many requests, nothing read
		p, err := dialClient(addr, nil)
		if err != nil {
			return false
		}
		var buf []byte
		for j := 0; j < 200; j++ {
			buf = append(buf, frameOf("stats", "req", strconv.Itoa(j))...)
		}
		_, _ = p.conn.Write(buf)
		time.Sleep(time.Millisecond)
		p.reset()
		return false
	case 4: // an executor cut in the middle of its result
		p, _, err := dialExecutor(addr, "reset-"+strconv.Itoa(i), "work", 1, nil)
		if err != nil {
			return false
		}
		defer p.reset()
		m, err := p.recv(200 * time.Millisecond)
		for err == nil && m.Type() != "task" {
			m, err = p.recv(200 * time.Millisecond)
		}
		if err != nil {
			return false
		}
		res := frameOf("result", "task_id", m.Value("task_id"), "version", m.Value("version"), "status", "succeeded")
		buf := frameOf("started", "task_id", m.Value("task_id"), "version", m.Value("version"))
		buf = append(buf, res[:1+rng.IntN(len(res)-1)]...)
		_, _ = p.conn.Write(buf)
		return true
	default: // a header announcing more than what follows
		p, err := dialClient(addr, nil)
		if err != nil {
			return false
		}
		var buf [4 + 10]byte
		binary.BigEndian.PutUint32(buf[:], 100)
		copy(buf[4:], "type=stats")
		_, _ = p.conn.Write(buf[:])
		p.reset()
		return false
	}
}
