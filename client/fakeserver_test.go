package client_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/apollo11/apollo11/auth"
	"github.com/apollo11/apollo11/client"
	"github.com/apollo11/apollo11/wire"
	"github.com/stretchr/testify/require"
)

const waitFor = 5 * time.Second

// fakeServer is a scripted main control on loopback: it sends `welcome` on
// each connection and hands the connection to the test.
type fakeServer struct {
	ln       net.Listener
	conns    chan *srvConn
	authMode string
	maxFrame int
}

// srvConn is one accepted connection, driven by the test.
type srvConn struct {
	t     testing.TB
	conn  net.Conn
	r     *wire.Reader
	nonce string
	wmu   sync.Mutex
}

type srvOpt func(*fakeServer)

func withAuth() srvOpt          { return func(f *fakeServer) { f.authMode = "hmac-sha256" } }
func withMaxFrame(n int) srvOpt { return func(f *fakeServer) { f.maxFrame = n } }

// mustStartFakeServer listens on 127.0.0.1:0; it stops at the end of the
// test.
func mustStartFakeServer(tb testing.TB, opts ...srvOpt) *fakeServer {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(tb, err)
	f := &fakeServer{ln: ln, conns: make(chan *srvConn, 8), authMode: "none", maxFrame: wire.DefaultMaxFrame}
	for _, o := range opts {
		o(f)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			nonce, _ := auth.NewNonce()
			sc := &srvConn{conn: c, r: wire.NewReader(c, 0), nonce: nonce}
			_ = writeMsg(c, "welcome", "proto", "1", "server", "apollo11/test", "nonce", nonce,
				"auth", f.authMode, "max_frame", strconv.Itoa(f.maxFrame))
			select {
			case f.conns <- sc:
			default:
				c.Close()
			}
		}
	}()
	tb.Cleanup(func() {
		ln.Close()
		<-done
		for {
			select {
			case c := <-f.conns:
				c.conn.Close()
			default:
				return
			}
		}
	})
	return f
}

func (f *fakeServer) addr() string { return f.ln.Addr().String() }

// accept returns the next connection, closed at the end of the test.
func (f *fakeServer) accept(tb testing.TB) *srvConn {
	tb.Helper()
	select {
	case c := <-f.conns:
		c.t = tb
		tb.Cleanup(func() { c.conn.Close() })
		return c
	case <-time.After(waitFor):
		tb.Fatal("no connection")
		return nil
	}
}

func writeMsg(w io.Writer, typ string, kv ...string) error {
	m := wire.NewMessage(typ)
	for i := 0; i+1 < len(kv); i += 2 {
		m.Set(kv[i], kv[i+1])
	}
	frame, err := wire.AppendFrame(nil, m)
	if err != nil {
		return err
	}
	_, err = w.Write(frame)
	return err
}

// send writes a frame; safe from any goroutine.
func (c *srvConn) send(typ string, kv ...string) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if err := writeMsg(c.conn, typ, kv...); err != nil {
		c.t.Errorf("fake server write: %v", err)
	}
}

// expect reads the next frame and checks its type.
func (c *srvConn) expect(typ string) *wire.Message {
	c.t.Helper()
	require.NoError(c.t, c.conn.SetReadDeadline(time.Now().Add(waitFor)))
	m, err := c.r.ReadMessage()
	require.NoError(c.t, err, "waiting for %s", typ)
	require.Equal(c.t, typ, m.Type(), "frame %s", m)
	require.NotEmpty(c.t, m.Value("req"), "every client request carries req")
	return m
}

// hello answers the handshake and returns the `hello` frame.
func (c *srvConn) hello() *wire.Message {
	c.t.Helper()
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
