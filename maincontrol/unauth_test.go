package maincontrol_test

import (
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/auth"
	"github.com/apollo11/apollo11/maincontrol"
	"github.com/apollo11/apollo11/maincontrol/core"
	"github.com/apollo11/apollo11/wire"
)

// tokenClient says hello with the MAC of testToken.
func tokenClient(t *testing.T, addr string) *rawPeer {
	t.Helper()
	p := dialRaw(t, addr)
	m := p.request("hello", "req", "h", "auth", auth.Sign(testToken, p.hello.Value("nonce")))
	require.Equal(t, "hello_ok", m.Type(), "got %s", m)
	return p
}

// silentConn connects, reads its first frame (welcome, or the error
// refusing it) so that the server has opened it, and says nothing more.
func silentConn(t *testing.T, addr string) (net.Conn, *wire.Message) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	require.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
	m, _ := wire.NewReader(c, 0).ReadMessage()
	return c, m
}

// Connections without the token that never finish their handshake must
// not keep out the peers that hold it: they counted against --max-conns,
// and a few silent ones got every token-holding client refused with
// unavailable until the handshake timeout.
func TestUnauth_SilentPeersDoNotCrowdOutTokenHolders(t *testing.T) {
	t.Parallel()
	const maxConns, maxUnauth = 8, 3
	addr := startServer(t, maincontrol.Config{MaxConns: maxConns, MaxUnauthConns: maxUnauth,
		Core: core.Config{Token: testToken, HandshakeTimeout: time.Minute}})
	early := []*rawPeer{tokenClient(t, addr), tokenClient(t, addr)}

	var silent []net.Conn
	for range 4 * maxConns {
		c, _ := silentConn(t, addr)
		silent = append(silent, c)
	}

	cl := tokenClient(t, addr)
	ex := dialRaw(t, addr)
	m := ex.request("register", "executor_id", "e1", "task_types", "t",
		"auth", auth.Sign(testToken, ex.hello.Value("nonce")))
	require.Equal(t, "registered", m.Type(), "got %s", m)
	for i, p := range early {
		p.alive("early" + strconv.Itoa(i))
	}
	cl.alive("c")
	ex.aliveExec(1)

	// The first silent one made room for a later one, and was told why.
	r := wire.NewReader(silent[0], 0)
	require.NoError(t, silent[0].SetReadDeadline(time.Now().Add(5*time.Second)))
	m, err := r.ReadMessage()
	require.NoError(t, err)
	assert.Equal(t, "error", m.Type())
	assert.Equal(t, "unavailable", m.Value("code"))
	assert.Contains(t, m.Value("message"), "--max-unauth-conns")
	_, err = r.ReadMessage()
	require.Error(t, err, "evicted, it is closed")

	// Token holders may take every connection, the silent ones' too;
	// only then is a newcomer refused.
	for i := 4; i < maxConns; i++ {
		tokenClient(t, addr).alive("more" + strconv.Itoa(i))
	}
	_, m = silentConn(t, addr)
	require.NotNil(t, m)
	assert.Equal(t, "error", m.Type())
	assert.Equal(t, "unavailable", m.Value("code"))
	assert.Contains(t, m.Value("message"), "--max-conns 8")
	cl.alive("still")
}
