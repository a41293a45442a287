package cluster

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/apollo11/apollo11/internal/tlsfiles"
)

// DefaultTLSHandshakeTimeout bounds an accepted raft connection's TLS
// handshake. A peer that connects and stays silent then holds nothing.
const DefaultTLSHandshakeTimeout = 10 * time.Second

// TLSStreamLayer is a raft.StreamLayer over mutual TLS. Both ends show a
// certificate from the same loader (reloaded on SIGHUP), and each
// verifies the other's against its CA bundle. A dialler also checks that
// the member's certificate holds the host of its raft address.
type TLSStreamLayer struct {
	ln        net.Listener
	advertise net.Addr
	files     *tlsfiles.Loader
	server    *tls.Config
	// HandshakeTimeout bounds an accepted connection's handshake.
	HandshakeTimeout time.Duration
}

var _ raft.StreamLayer = (*TLSStreamLayer)(nil)

// NewTLSStreamLayer listens on bind. advertise is the address the other
// members dial; nil means the bound address, which must then be a
// specific IP. files must name a certificate, its key and a CA bundle.
// It holds at most DefaultMaxConns accepted connections at once.
func NewTLSStreamLayer(bind string, advertise net.Addr, files *tlsfiles.Loader) (*TLSStreamLayer, error) {
	return newTLSStreamLayer(bind, advertise, files, DefaultMaxConns, nil)
}

func newTLSStreamLayer(bind string, advertise net.Addr, files *tlsfiles.Loader, maxConns int, log *slog.Logger) (*TLSStreamLayer, error) {
	if files == nil || !files.HasCA() {
		return nil, fmt.Errorf("%w: raft over TLS is mutual: it needs --raft-tls-cert, --raft-tls-key and --raft-tls-ca", tlsfiles.ErrFiles)
	}
	server, err := files.ServerConfig()
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", bind)
	if err != nil {
		return nil, fmt.Errorf("cannot listen for raft on %s: %w", bind, err)
	}
	if advertise == nil {
		advertise = ln.Addr()
	}
	if tcp, ok := advertise.(*net.TCPAddr); !ok || tcp.IP == nil || tcp.IP.IsUnspecified() {
		_ = ln.Close()
		return nil, fmt.Errorf("raft address %v is not one other members can dial: give a specific IP", advertise)
	}
	return &TLSStreamLayer{ln: newCapListener(ln, maxConns, log), advertise: advertise, files: files, server: server,
		HandshakeTimeout: DefaultTLSHandshakeTimeout}, nil
}

// Accept waits for a member's connection. Its TLS handshake runs at its
// first read or write, within HandshakeTimeout, so one slow member does
// not hold up the others' accepts.
func (s *TLSStreamLayer) Accept() (net.Conn, error) {
	c, err := s.ln.Accept()
	if err != nil {
		return nil, err
	}
	return &serverConn{Conn: tls.Server(c, s.server), timeout: s.HandshakeTimeout}, nil
}

// Close stops listening.
func (s *TLSStreamLayer) Close() error { return s.ln.Close() }

// Addr is the address other members dial.
func (s *TLSStreamLayer) Addr() net.Addr { return s.advertise }

// Dial connects to a member and completes the TLS handshake within
// timeout.
func (s *TLSStreamLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", string(address))
	if err != nil {
		return nil, err
	}
	return tlsfiles.Client(ctx, c, string(address), s.files.ClientConfig(""))
}

// serverConn is an accepted connection whose handshake is bounded.
type serverConn struct {
	*tls.Conn
	timeout time.Duration
	done    atomic.Bool
}

func (c *serverConn) handshake() error {
	if c.done.Load() {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	if err := c.HandshakeContext(ctx); err != nil {
		_ = c.Conn.Close()
		return fmt.Errorf("raft TLS handshake with %v: %w", c.RemoteAddr(), err)
	}
	c.done.Store(true)
	return nil
}

func (c *serverConn) Read(b []byte) (int, error) {
	if err := c.handshake(); err != nil {
		return 0, err
	}
	return c.Conn.Read(b)
}

func (c *serverConn) Write(b []byte) (int, error) {
	if err := c.handshake(); err != nil {
		return 0, err
	}
	return c.Conn.Write(b)
}
