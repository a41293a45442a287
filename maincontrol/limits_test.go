package maincontrol_test

import (
	"errors"
	"net"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/maincontrol"
	"github.com/apollo11/apollo11/snapshot/snapshottest"
	"github.com/apollo11/apollo11/wire"
)

// Connection limits: --max-conns, and the outbound cap for a peer that
// stops reading.

func TestLimits_MaxConns(t *testing.T) {
	t.Parallel()
	addr := startServer(t, maincontrol.Config{MaxConns: 3})
	a := clientPeer(t, addr)
	b := clientPeer(t, addr)
	c := executorPeer(t, addr, "e1", "t", 1)

	extra, err := net.DialTimeout("tcp", addr, 5*time.Second)
	require.NoError(t, err)
	defer extra.Close()
	require.NoError(t, extra.SetReadDeadline(time.Now().Add(5*time.Second)))
	r := wire.NewReader(extra, 0)
	m, err := r.ReadMessage()
	require.NoError(t, err, "the 4th connection is told why, in place of welcome")
	assert.Equal(t, "error", m.Type())
	assert.Equal(t, "unavailable", m.Value("code"))
	assert.Contains(t, m.Value("message"), "too many connections (--max-conns 3)")
	_, err = r.ReadMessage()
	assert.Error(t, err, "the 4th connection is closed")
	var ne net.Error
	assert.False(t, err != nil && errors.As(err, &ne) && ne.Timeout(), "the 4th connection was not closed")

	a.alive("a")
	c.aliveExec(1)
	b.alive("b")

	// Once one leaves, there is room again.
	require.NoError(t, a.c.Close())
	deadline := time.Now().Add(5 * time.Second)
	for {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		require.NoError(t, err)
		p := &rawPeer{t: t, c: conn, r: wire.NewReader(conn, 0), w: wire.NewWriter(conn, 0)}
		_ = conn.SetReadDeadline(time.Now().Add(time.Second))
		m, err := p.r.ReadMessage()
		if err == nil {
			assert.Equal(t, "welcome", m.Type())
			conn.Close()
			break
		}
		conn.Close()
		require.True(t, time.Now().Before(deadline), "no room after a connection closed")
		time.Sleep(20 * time.Millisecond)
	}
}

// A peer that sends requests with big replies and never reads is cut off
// once its unsent output passes MaxOutbound, without the server buffering
// much more than that, and the others keep working.
func TestLimits_SlowReaderCutOff(t *testing.T) {
	const maxOutbound = 1 << 20
	addr := startServer(t, maincontrol.Config{MaxOutbound: maxOutbound})
	cl := clientPeer(t, addr)
	ex := executorPeer(t, addr, "e1", "t", 1)
	blob := strings.Repeat("b", 256<<10)
	cl.submit("s", "task_type", "t")
	task := ex.expectTask(0)
	ex.start(task)
	require.Equal(t, "true", ex.finish(task, "status", "succeeded", "state.set.blob", blob).Value("accepted"))

	slow := clientPeer(t, addr)
	// 1,000 requests of 256 KiB replies each: 256 MiB if all were buffered.
	var burst []byte
	for i := 0; i < 1000; i++ {
		burst = append(burst, mustFrame(t, "state_get", "keys", "blob")...)
	}
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	require.NoError(t, slow.c.SetWriteDeadline(time.Now().Add(10*time.Second)))
	_, _ = slow.c.Write(burst) // may fail once the server has cut it off

	// The others keep working meanwhile, and see the slow one go.
	deadline := time.Now().Add(10 * time.Second)
	for cl.request("stats", "req", "s").Value("connections") != "2" {
		require.True(t, time.Now().Before(deadline), "the slow reader was not cut off")
		ex.aliveExec(1)
		time.Sleep(10 * time.Millisecond)
	}
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("allocated while serving the slow reader: %d MiB", allocated>>20)
	assert.Less(t, allocated, uint64(64<<20), "the server buffered far more than MaxOutbound")
	cl.alive("after")
	ex.aliveExec(2)
	assert.True(t, readUntilClosed(slow.c, 10*time.Second), "the slow reader's connection is closed")
}

// A connection whose reading is paused (its replies wait for a disk that
// has stalled) may pile up only MaxPausedInbound of input before it is
// refused and closed, and all paused connections together eight times
// that; the others and reads of their state go on.
func TestLimits_PausedInbound(t *testing.T) {
	t.Parallel()
	ffs := snapshottest.NewFaultFS(nil)
	const perConn = 256 << 10
	addr := startServer(t, maincontrol.Config{DataDir: t.TempDir(), FS: ffs, MaxInflight: 4, MaxPausedInbound: perConn})
	t.Cleanup(ffs.ReleaseSyncs) // before the server stops: it waits for the disk
	// Every peer connects first: while a record waits for the disk, even
	// a welcome waits (no reply may show a change that is not durable).
	one := clientPeer(t, addr)
	var peers []*rawPeer
	for range 11 {
		peers = append(peers, clientPeer(t, addr))
	}
	ffs.HoldSyncs()

	// push writes submits of about 4 KiB each, not reading, until n bytes
	// are written or the connection breaks.
	push := func(p *rawPeer, n int) {
		arg := strings.Repeat("x", 4000)
		var buf []byte
		for i := 0; len(buf) < n; i++ {
			buf = append(buf, mustFrame(t, "submit", "req", "r"+strconv.Itoa(i), "task_type", "t", "arg.a", arg)...)
		}
		go func() {
			_ = p.c.SetWriteDeadline(time.Now().Add(10 * time.Second))
			_, _ = p.c.Write(buf)
		}()
	}
	refused := func(p *rawPeer) bool {
		_ = p.c.SetReadDeadline(time.Now().Add(3 * time.Second))
		m, err := p.r.ReadMessage()
		if err != nil {
			return false
		}
		assert.Equal(t, "error", m.Type(), "nothing else is sent while the disk stalls: %s", m)
		assert.Equal(t, "too many requests awaiting disk", m.Value("message"))
		return true
	}

	push(one, 4*perConn)
	require.True(t, refused(one), "one connection past its own cap")
	one.expectClosed()

	// Eleven connections each under the cap, together past 8x it.
	for _, p := range peers {
		push(p, perConn*9/10)
	}
	var n atomic.Int32
	var wg sync.WaitGroup
	for _, p := range peers {
		wg.Go(func() {
			if refused(p) {
				n.Add(1)
			}
		})
	}
	wg.Wait()
	assert.GreaterOrEqual(t, n.Load(), int32(1), "the total is capped")
	assert.Less(t, n.Load(), int32(11), "only as many as needed to get under it")

	ffs.ReleaseSyncs()
	reader := clientPeer(t, addr)
	reader.send("stats", "req", "s")
	reader.expect("stats") // and the server goes on
}
