// Package fakemain is a scripted main control for the tests of the
// client and executor packages. It accepts connections on loopback (or
// over net.Pipe) and sends `welcome`. It hands each connection to the
// test, which plays the rest of the protocol by hand.
package fakemain

import (
	"cmp"
	"context"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/auth"
	"github.com/apollo11/apollo11/internal/patience"
	"github.com/apollo11/apollo11/wire"
)

// WaitFor bounds every wait of the fake. It scales with the machine's
// load, so that a busy host is slow, not failing.
var WaitFor = patience.Scale(5 * time.Second)

// Server is the fake main control.
type Server struct {
	ln       net.Listener
	conns    chan *Conn
	authMode string
	greeting []byte // sent in place of welcome when set
	maxFrame atomic.Int64
	stop     chan struct{}
	listen   string
	follower *Follower // answers by itself when set
	refused  atomic.Int64
	accepted atomic.Int64
	wg       sync.WaitGroup // the follower's connection goroutines
}

// Option changes what the welcome announces.
type Option func(*Server)

// WithAuth announces auth=hmac-sha256.
func WithAuth() Option { return func(s *Server) { s.authMode = "hmac-sha256" } }

// WithMaxFrame announces max_frame=n.
func WithMaxFrame(n int) Option { return func(s *Server) { s.maxFrame.Store(int64(n)) } }

// WithGreeting sends raw in place of the welcome. raw may be a broken
// frame, or another service's banner.
func WithGreeting(raw []byte) Option { return func(s *Server) { s.greeting = raw } }

// Follower scripts a cluster follower (protocol section 8.13). It plays
// every connection by itself, and none is handed to Accept. hello gets
// hello_ok with role=follower. Every request gets `error code=not_leader`.
// register gets it too, and the connection is closed.
type Follower struct {
	HelloLeader string // the leader hello_ok names; "" names none
	Role        string // the role hello_ok says; "" says follower
	Leader      string // the leader each not_leader names; "" names none
}

// WithFollower makes the server the follower f.
func WithFollower(f Follower) Option { return func(s *Server) { s.follower = &f } }

// Refused is how many not_leader errors a follower has sent.
func (s *Server) Refused() int64 { return s.refused.Load() }

// Accepted is how many connections the server has accepted.
func (s *Server) Accepted() int64 { return s.accepted.Load() }

// WithListen listens on addr instead of 127.0.0.1:0.
func WithListen(addr string) Option { return func(s *Server) { s.listen = addr } }

// Start listens on 127.0.0.1:0. Everything stops at the end of the test.
func Start(tb testing.TB, opts ...Option) *Server {
	tb.Helper()
	s := &Server{conns: make(chan *Conn, 16), authMode: "none", stop: make(chan struct{}), listen: "127.0.0.1:0"}
	s.maxFrame.Store(wire.DefaultMaxFrame)
	for _, o := range opts {
		o(s)
	}
	ln, err := net.Listen("tcp", s.listen)
	require.NoError(tb, err)
	s.ln = ln
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.accepted.Add(1)
			s.serve(c)
		}
	}()
	tb.Cleanup(func() {
		close(s.stop)
		ln.Close()
		<-done
		s.wg.Wait()
		for {
			select {
			case c := <-s.conns:
				c.Net.Close()
			default:
				return
			}
		}
	})
	return s
}

// serve sends welcome on c and hands it to Accept.
func (s *Server) serve(c net.Conn) {
	nonce, err := auth.NewNonce()
	if err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	fc := &Conn{Net: c, R: wire.NewReader(c, 0), Nonce: nonce}
	if s.greeting != nil {
		_, _ = c.Write(s.greeting)
	} else {
		_ = WriteMsg(c, "welcome", "proto", "1", "server", "apollo11/test", "nonce", nonce,
			"auth", s.authMode, "max_frame", strconv.FormatInt(s.maxFrame.Load(), 10))
	}
	if s.follower != nil {
		s.wg.Add(1)
		go s.follow(fc)
		return
	}
	select {
	case s.conns <- fc:
	case <-s.stop:
		c.Close()
	}
}

// Addr is the address to dial.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// SetMaxFrame changes the max_frame later welcomes announce.
func (s *Server) SetMaxFrame(n int) { s.maxFrame.Store(int64(n)) }

// PipeDial connects through net.Pipe, with no socket. The server's side is
// handed to Accept. It fits client and executor Dial options.
func (s *Server) PipeDial(context.Context, string) (net.Conn, error) {
	client, server := net.Pipe()
	go s.serve(server) // net.Pipe is synchronous: welcome waits for the reader
	return client, nil
}

// Accept returns the next connection, which the test drives and which is
// closed at the end of the test.
func (s *Server) Accept(tb testing.TB) *Conn {
	tb.Helper()
	select {
	case c := <-s.conns:
		c.T = tb
		tb.Cleanup(func() { c.Net.Close() })
		return c
	case <-time.After(WaitFor):
		tb.Fatal("no connection")
		return nil
	}
}

// NoConn checks that nobody connects within d.
func (s *Server) NoConn(tb testing.TB, d time.Duration) {
	tb.Helper()
	select {
	case c := <-s.conns:
		c.Net.Close()
		tb.Fatal("unexpected connection")
	case <-time.After(d):
	}
}

// Conn is one accepted connection.
type Conn struct {
	T     testing.TB
	Net   net.Conn
	R     *wire.Reader
	Nonce string // the nonce its welcome carried
	wmu   sync.Mutex
}

// Send writes a frame built from key/value pairs. It is safe from any
// goroutine. A failure fails the test.
func (c *Conn) Send(typ string, kv ...string) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if err := WriteMsg(c.Net, typ, kv...); err != nil {
		c.T.Errorf("fake main control: write %s: %v", typ, err)
	}
}

// BrokenFrame is bytes a peer cannot decode, and the code of the error
// frame with which it must answer them before it closes (spec sections 1
// and 2).
type BrokenFrame struct {
	Name string
	Raw  []byte
	Code wire.Code
}

// BrokenFrames are the cases the client and executor tests send.
var BrokenFrames = []BrokenFrame{
	{"no type", []byte{0, 0, 0, 5, 's', 'e', 'q', '=', '1'}, wire.CodeMalformed},
	{"zero length", []byte{0, 0, 0, 0}, wire.CodeMalformed},
	{"too large", []byte{0x7f, 0xff, 0xff, 0xff}, wire.CodeFrameTooLarge},
}

// SendRaw writes bytes as they are, a broken frame say. It is safe from
// any goroutine. A failure fails the test.
func (c *Conn) SendRaw(b []byte) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if _, err := c.Net.Write(b); err != nil {
		c.T.Errorf("fake main control: write: %v", err)
	}
}

// WriteMsg writes a frame built from key/value pairs.
func WriteMsg(w io.Writer, typ string, kv ...string) error {
	m := wire.NewMessage(wire.Kind(typ))
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

// follow plays a follower on c until the peer or the test ends it.
func (s *Server) follow(c *Conn) {
	defer s.wg.Done()
	defer c.Net.Close()
	stop := context.AfterFunc(stopCtx(s.stop), func() { c.Net.Close() })
	defer stop()
	f := s.follower
	for {
		m, err := c.R.ReadMessage()
		if err != nil {
			return
		}
		var kv []string
		switch m.Type() {
		case "hello":
			kv = []string{"req", m.Value("req"), "role", cmp.Or(f.Role, "follower")}
			if f.HelloLeader != "" {
				kv = append(kv, "leader", f.HelloLeader)
			}
			if WriteMsg(c.Net, "hello_ok", kv...) != nil {
				return
			}
			continue
		case "register":
			kv = []string{"code", "not_leader"}
		default:
			kv = []string{"code", "not_leader", "req", m.Value("req")}
		}
		if f.Leader != "" {
			kv = append(kv, "leader", f.Leader)
		}
		s.refused.Add(1)
		if WriteMsg(c.Net, "error", kv...) != nil || m.Type() == "register" {
			return
		}
	}
}

// stopCtx is a context that ends when stop is closed.
func stopCtx(stop <-chan struct{}) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-stop
		cancel()
	}()
	return ctx
}
