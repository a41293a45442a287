package maincontrol_test

import (
	"log/slog"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/internal/patience"
	"github.com/apollo11/apollo11/internal/syncbuf"
	"github.com/apollo11/apollo11/maincontrol"
)

// blobServer starts a main control whose shared state holds a 256 KiB
// value under "blob", so that each state_get keys=blob costs that much
// output, and returns a reading client and the logs.
func blobServer(t *testing.T, cfg maincontrol.Config) (string, *rawPeer, *syncbuf.Buffer) {
	var logs syncbuf.Buffer
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	addr := startServer(t, cfg)
	cl := clientPeer(t, addr)
	ex := executorPeer(t, addr, "e1", "t", 1)
	cl.submit("s", "task_type", "t")
	task := ex.expectTask(0)
	ex.start(task)
	require.Equal(t, "true", ex.finish(task, "status", "succeeded", "state.set.blob", strings.Repeat("b", 256<<10)).Value("accepted"))
	return addr, cl, &logs
}

// askAndStall sends n state_get keys=blob on a new client connection and
// never reads.
func askAndStall(t *testing.T, addr string, n int) *rawPeer {
	p := clientPeer(t, addr)
	stall(t, p, n)
	return p
}

// stall sends n state_get keys=blob on p, which never reads.
func stall(t *testing.T, p *rawPeer, n int) {
	var burst []byte
	for range n {
		burst = append(burst, mustFrame(t, "state_get", "keys", "blob")...)
	}
	require.NoError(t, p.c.SetWriteDeadline(time.Now().Add(10*time.Second)))
	_, _ = p.c.Write(burst)
}

var unsentRE = regexp.MustCompile(`connection closed: peer is not reading: sent \d+ of (\d+) unsent bytes`)

// The per-connection cap is checked before a round's replies are piled on
// what gnet already holds: a peer is cut off with at most one reply more
// than MaxOutbound unsent, not up to twice as much.
func TestOutbound_CutAtTheCap(t *testing.T) {
	const maxOutbound = 1 << 20
	addr, cl, logs := blobServer(t, maincontrol.Config{MaxOutbound: maxOutbound})
	askAndStall(t, addr, 200)       // 50 MiB if all were buffered
	waitConnections(t, cl, 2, logs) // the reading client and the executor
	var m []string
	require.Eventually(t, func() bool {
		m = unsentRE.FindStringSubmatch(logs.String())
		return m != nil
	}, 5*time.Second, 10*time.Millisecond, logs.String())
	unsent, err := strconv.Atoi(m[1])
	require.NoError(t, err)
	assert.LessOrEqual(t, unsent, maxOutbound+(256<<10)+4096, "cut off far past the cap")
	cl.alive("after")
}

// Idle peers that each ask for less than MaxOutbound and never read
// cannot make the server hold more than MaxOutboundTotal between them:
// those holding the most are cut off, and a reading peer goes on.
func TestOutbound_TotalCap(t *testing.T) {
	const total = 24 << 20
	addr, cl, logs := blobServer(t, maincontrol.Config{MaxOutboundTotal: total})
	const stallers = 6
	// Every staller finishes its handshake first: on a busy host a
	// welcome would otherwise wait behind the replies piled for the
	// stallers before it.
	var peers []*rawPeer
	for range stallers {
		peers = append(peers, clientPeer(t, addr))
	}
	for _, p := range peers {
		// 14 MiB each, under the 16 MiB per-connection cap; the kernel's
		// socket buffers take a few MiB of it.
		stall(t, p, 56)
	}
	waitConnections(t, cl, 2+stallers-2, logs)
	assert.Contains(t, logs.String(), "peer is not reading: sent 0 of")
	// Read every staller at once, for as long as a busy machine needs to
	// deliver what a cut one still had in flight.
	closed := make(chan bool, stallers)
	for _, p := range peers {
		go func() { closed <- readUntilClosed(p.c, patience.Scale(500*time.Millisecond)) }()
	}
	cut := 0
	for range peers {
		if <-closed {
			cut++
		}
	}
	t.Logf("%d of %d stallers cut off", cut, stallers)
	assert.GreaterOrEqual(t, cut, 2)
	assert.Less(t, cut, stallers, "only those holding the most are cut off")
	cl.alive("after")
}

// waitConnections waits until the server counts at most n connections,
// asking through cl (a reader of one's own would drain the stallers).
func waitConnections(t *testing.T, cl *rawPeer, n int, logs *syncbuf.Buffer) {
	t.Helper()
	deadline := time.Now().Add(patience.Scale(20 * time.Second))
	for {
		got, err := strconv.Atoi(cl.request("stats", "req", "s").Value("connections"))
		require.NoError(t, err)
		if got <= n {
			return
		}
		require.True(t, time.Now().Before(deadline), "%d connections, want at most %d\n%s", got, n, logs.String())
		time.Sleep(20 * time.Millisecond)
	}
}

// The unsent output all peers hold is a gauge, so that an operator sees
// the server near its total.
func TestOutbound_UnsentGauge(t *testing.T) {
	httpAddr := freeAddr(t)
	addr, _, logs := blobServer(t, maincontrol.Config{HTTPListen: httpAddr})
	askAndStall(t, addr, 40) // 10 MiB: more than the kernel's buffers take, under the 16 MiB cap
	unsentRE := regexp.MustCompile(`\napollo11_unsent_bytes (\S+)\n`)
	require.Eventually(t, func() bool {
		m := unsentRE.FindStringSubmatch(httpGet(t, "http://"+httpAddr+"/metrics"))
		return m != nil && m[1] != "0"
	}, 10*time.Second, 20*time.Millisecond, logs.String())
	assert.Contains(t, httpGet(t, "http://"+httpAddr+"/metrics"), "\napollo11_incomplete_frame_bytes 0\n")
}
