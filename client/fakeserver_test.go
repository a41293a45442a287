package client_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/client"
	"github.com/apollo11/apollo11/internal/fakemain"
	"github.com/apollo11/apollo11/wire"
)

var waitFor = fakemain.WaitFor

// fakeServer is a scripted main control (see internal/fakemain): it sends
// `welcome` on each connection and hands the connection to the test.
type fakeServer struct{ *fakemain.Server }

// srvConn is one accepted connection, with the main control's side of the
// client protocol's helpers.
type srvConn struct{ *fakemain.Conn }

// mustStartFakeServer listens on 127.0.0.1:0; it stops at the end of the
// test.
func mustStartFakeServer(tb testing.TB, opts ...fakemain.Option) *fakeServer {
	tb.Helper()
	return &fakeServer{fakemain.Start(tb, opts...)}
}

func (f *fakeServer) addr() string { return f.Addr() }

// accept returns the next connection, closed at the end of the test.
func (f *fakeServer) accept(tb testing.TB) *srvConn {
	tb.Helper()
	return &srvConn{f.Accept(tb)}
}

// send writes a frame; safe from any goroutine.
func (c *srvConn) send(typ string, kv ...string) { c.Send(typ, kv...) }

// expect reads the next frame and checks its type ("" takes any).
func (c *srvConn) expect(typ string) *wire.Message {
	c.T.Helper()
	require.NoError(c.T, c.Net.SetReadDeadline(time.Now().Add(waitFor)))
	m, err := c.R.ReadMessage()
	require.NoError(c.T, err, "waiting for %s", typ)
	if typ != "" {
		require.Equal(c.T, typ, m.Type(), "frame %s", m)
	}
	require.NotEmpty(c.T, m.Value("req"), "every client request carries req")
	return m
}

// hello answers the handshake and returns the `hello` frame.
func (c *srvConn) hello() *wire.Message {
	c.T.Helper()
	m := c.expect("hello")
	c.send("hello_ok", "req", m.Value("req"))
	return m
}

// mustDial connects a client to f and completes the handshake; the client
// is closed at the end of the test.
func mustDial(tb testing.TB, f *fakeServer, opts client.Options) (*client.Client, *srvConn) {
	tb.Helper()
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	type dialed struct {
		c   *client.Client
		err error
	}
	ch := make(chan dialed, 1)
	go func() {
		c, err := client.Dial(context.Background(), f.addr(), opts)
		ch <- dialed{c, err}
	}()
	sc := f.accept(tb)
	sc.hello()
	d := <-ch
	require.NoError(tb, d.err)
	tb.Cleanup(func() { d.c.Close() })
	return d.c, sc
}
