package maincontrol_test

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/internal/patience"
	"github.com/apollo11/apollo11/maincontrol"
	"github.com/apollo11/apollo11/maincontrol/maincontroltest"
	"github.com/apollo11/apollo11/wire"
)

// freeAddr returns a loopback address with a port that was free a moment ago.
func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

func testLogger() *slog.Logger {
	if os.Getenv("APOLLO11_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// startServer runs a main control until the test ends and returns its
// address.
func startServer(t testing.TB, cfg maincontrol.Config) string {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = testLogger()
	}
	addr, _ := maincontroltest.Start(t, cfg)
	return addr
}

// rawPeer speaks the wire protocol directly, as an independent client would.
type rawPeer struct {
	t     testing.TB
	c     net.Conn
	r     *wire.Reader
	w     *wire.Writer
	hello *wire.Message
}

func dialRaw(t testing.TB, addr string) *rawPeer {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, patience.Scale(5*time.Second))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	p := &rawPeer{t: t, c: c, r: wire.NewReader(c, 0), w: wire.NewWriter(c, 0)}
	p.hello = p.recv()
	require.Equal(t, "welcome", p.hello.Type())
	return p
}

func (p *rawPeer) send(typ string, kv ...string) {
	p.t.Helper()
	m := wire.NewMessage(wire.Kind(typ))
	for i := 0; i+1 < len(kv); i += 2 {
		m.Set(kv[i], kv[i+1])
	}
	require.NoError(p.t, p.w.Send(m))
}

func (p *rawPeer) recv() *wire.Message {
	p.t.Helper()
	require.NoError(p.t, p.c.SetReadDeadline(time.Now().Add(patience.Scale(5*time.Second))))
	m, err := p.r.ReadMessage()
	require.NoError(p.t, err)
	return m
}

func (p *rawPeer) expect(typ string) *wire.Message {
	p.t.Helper()
	m := p.recv()
	require.Equal(p.t, typ, m.Type(), "got %s", m)
	return m
}

// expectClosed reads until the server closes the connection.
func (p *rawPeer) expectClosed() {
	p.t.Helper()
	require.NoError(p.t, p.c.SetReadDeadline(time.Now().Add(patience.Scale(5*time.Second))))
	for {
		_, err := p.r.ReadMessage()
		if err != nil {
			var ne net.Error
			require.False(p.t, errors.As(err, &ne) && ne.Timeout(), "connection not closed: %v", err)
			return
		}
	}
}

func clientPeer(t testing.TB, addr string) *rawPeer {
	p := dialRaw(t, addr)
	p.send("hello", "req", "h", "client", "test")
	p.expect("hello_ok")
	return p
}

func executorPeer(t testing.TB, addr, id, types string, slots int) *rawPeer {
	p := dialRaw(t, addr)
	p.send("register", "executor_id", id, "task_types", types, "slots", strconv.Itoa(slots))
	p.expect("registered")
	return p
}

func httpGet(t testing.TB, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
	return string(b)
}
