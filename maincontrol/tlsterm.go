package maincontrol

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/apollo11/apollo11/internal/tlsfiles"
	"github.com/apollo11/apollo11/maincontrol/core"
)

// gnet has no TLS, so the main port's TLS ends in this process. The
// acceptor's hand-over starts a handshake on a goroutine of its own, so a
// slow handshaker holds no accept slot. A connection in its TLS handshake
// counts against --max-unauth-conns and --max-conns, like one awaiting
// hello. At either cap it is the first to make room (makeRoom). It has at
// most the handshake timeout. Then one end of a socketpair goes to an
// event loop, which sees plaintext as from any peer. Two pump goroutines
// copy between the TLS connection and the other end. Each holds one
// buffer of pumpChunk, and the socketpair's kernel buffers are capped at
// pairBuffer. A peer that stops reading fills them, and then gnet's own
// outbound caps watch it as they watch a plaintext peer.

const (
	pumpChunk  = 16 << 10 // one TLS record's plaintext
	pairBuffer = 64 << 10 // each direction of the socketpair
	// tlsConnDescriptors is what a TLS connection holds: the TCP socket,
	// the pump's end of the socketpair and the event loop's.
	tlsConnDescriptors = 3
	// tlsLogEvery spaces the log lines of failed TLS handshakes. A
	// scanner would otherwise write one line per probe.
	tlsLogEvery = 10 * time.Second
)

// shake is a connection in its TLS handshake, in Server.shakes. Its
// links say whether it is still there: not evicted, not done.
type shake struct {
	c       net.Conn
	waiting fifoLinks[*shake]
}

func (sh *shake) links() *fifoLinks[*shake] { return &sh.waiting }

// shakeQueue lists the connections in their TLS handshake, oldest first.
// It is guarded by Server.mu.
type shakeQueue = fifo[*shake]

// tlsOrigin is the context a TLS connection's plaintext end is enrolled
// with. OnOpen takes the peer's real address from it.
type tlsOrigin struct {
	remote string
	tc     *tls.Conn
}

// lastWords bounds how long the pump may still write to the peer once
// the event loop closed the plaintext end. Replies written just before
// the close, such as an auth_failed error, still go out.
func (o *tlsOrigin) lastWords(grace time.Duration) {
	if o.tc != nil {
		_ = o.tc.SetWriteDeadline(time.Now().Add(grace))
	}
}

// dialInProcess connects to the event loop through a socketpair, without
// TLS. The peer still says hello with the token like any other.
func (s *Server) dialInProcess(context.Context, string) (net.Conn, error) {
	ours, theirs, err := socketPair()
	if err != nil {
		return nil, err
	}
	if _, err := s.loops.EnrollContext(theirs, &tlsOrigin{remote: "in-process"}); err != nil {
		_ = ours.Close()
		return nil, err
	}
	return ours, nil
}

// handOverTLS starts the TLS handshake of c, on a goroutine of its own.
func (s *Server) handOverTLS(c net.Conn) error {
	sh := &shake{c: c}
	s.mu.Lock()
	if s.stopping || !s.makeRoom() {
		s.mu.Unlock()
		// No plaintext refusal can reach a TLS client: just close.
		s.noteTLSFailure(c.RemoteAddr(), errors.New("refused: every connection is through its handshake and --max-conns is reached, or the main control is stopping"))
		return c.Close()
	}
	s.shakes.push(sh)
	s.terminating.Add(1) // under s.mu, so closeShakes cannot Wait before it
	wakes := s.wakes.take(nil)
	s.mu.Unlock()
	wake(wakes)
	go func() {
		tc, plain := s.terminate(sh)
		s.terminating.Done()
		if plain != nil {
			pump(tc, plain)
		}
	}()
	return nil
}

// evictShake closes the connection longest in its TLS handshake. It runs
// with s.mu held and reports whether there was one.
func (s *Server) evictShake() bool {
	sh := s.shakes.head
	if sh == nil {
		return false
	}
	s.shakes.remove(sh)
	_ = sh.c.Close() // its handshake fails at once
	return true
}

// closeShakes closes every connection still in its TLS handshake, at stop.
func (s *Server) closeShakes() {
	s.mu.Lock()
	for s.evictShake() {
	}
	s.mu.Unlock()
	s.terminating.Wait()
}

// terminate does the TLS handshake, then hands the plaintext end to an
// event loop. It returns the ends to pump between, or nil when closed.
func (s *Server) terminate(sh *shake) (*tls.Conn, *net.UnixConn) {
	tc := tls.Server(sh.c, s.tlsConfig)
	ctx, cancel := context.WithTimeout(context.Background(), cmp.Or(s.cfg.Core.HandshakeTimeout, core.DefaultHandshakeTimeout))
	err := tc.HandshakeContext(ctx)
	cancel()
	s.mu.Lock()
	evicted := !sh.waiting.in
	s.shakes.remove(sh)
	s.mu.Unlock()
	if err != nil || evicted {
		if !evicted {
			s.noteTLSFailure(sh.c.RemoteAddr(), err)
		}
		_ = sh.c.Close()
		return nil, nil
	}
	ours, theirs, err := socketPair()
	if err != nil {
		s.noteTLSFailure(sh.c.RemoteAddr(), err)
		_ = sh.c.Close()
		return nil, nil
	}
	origin := &tlsOrigin{remote: sh.c.RemoteAddr().String(), tc: tc}
	if _, err := s.loops.EnrollContext(theirs, origin); err != nil { // it closed theirs
		_ = ours.Close()
		_ = sh.c.Close()
		if !s.isStopping() {
			s.noteTLSFailure(sh.c.RemoteAddr(), err)
		}
		return nil, nil
	}
	return tc, ours
}

func (s *Server) isStopping() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopping
}

// pump copies between the peer's TLS connection and the event loop's
// plaintext end until the loop closes its end or the peer is gone.
func pump(tc *tls.Conn, plain *net.UnixConn) {
	var in sync.WaitGroup
	in.Go(func() {
		// The peer's end of input is the loop's: it then closes.
		_, _ = io.CopyBuffer(plain, onlyReader{tc}, make([]byte, pumpChunk))
		_ = plain.CloseWrite()
	})
	_, _ = io.CopyBuffer(onlyWriter{tc}, onlyReader{plain}, make([]byte, pumpChunk))
	_ = plain.Close()
	_ = tc.Close() // close_notify, then the TCP connection: the reader ends
	in.Wait()
}

// onlyReader and onlyWriter hide ReadFrom and WriteTo, so CopyBuffer
// uses the bounded buffer it is given.
type onlyReader struct{ io.Reader }
type onlyWriter struct{ io.Writer }

// socketPair makes a connected pair of Unix stream sockets with bounded
// kernel buffers.
func socketPair() (ours, theirs *net.UnixConn, err error) {
	syscall.ForkLock.RLock()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err == nil {
		syscall.CloseOnExec(fds[0])
		syscall.CloseOnExec(fds[1])
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return nil, nil, os.NewSyscallError("socketpair", err)
	}
	var conns [2]*net.UnixConn
	for i, fd := range fds {
		_ = syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_SNDBUF, pairBuffer)
		_ = syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_RCVBUF, pairBuffer)
		f := os.NewFile(uintptr(fd), "tls-plaintext")
		c, ferr := net.FileConn(f) // a duplicate: f is closed below
		_ = f.Close()
		if ferr != nil {
			err = ferr
			continue
		}
		conns[i], _ = c.(*net.UnixConn)
	}
	if err != nil || conns[0] == nil || conns[1] == nil {
		for _, c := range conns {
			if c != nil {
				_ = c.Close()
			}
		}
		return nil, nil, cmp.Or(err, errors.New("socketpair: not a Unix connection"))
	}
	return conns[0], conns[1], nil
}

// noteTLSFailure logs a connection refused or failed in its TLS
// handshake, at most once per tlsLogEvery.
func (s *Server) noteTLSFailure(remote net.Addr, err error) {
	s.tlsLog.Lock()
	defer s.tlsLog.Unlock()
	s.tlsLog.failed++
	now := time.Now()
	if !s.tlsLog.last.IsZero() && now.Sub(s.tlsLog.last) < tlsLogEvery {
		return
	}
	s.log.Warn("TLS connection closed before the protocol began", "remote", remote, "err", err, "failures", s.tlsLog.failed)
	s.tlsLog.failed, s.tlsLog.last = 0, now
}

// tlsFailureLog is the state of noteTLSFailure.
type tlsFailureLog struct {
	sync.Mutex
	failed int
	last   time.Time
}

// loadTLS reads Config.TLS's files, when it names any.
func (s *Server) loadTLS() error {
	if s.cfg.TLS.Empty() {
		return nil
	}
	l, err := tlsfiles.Load(s.cfg.TLS, s.log)
	if err != nil {
		return err
	}
	c, err := l.ServerConfig()
	if err != nil {
		return err
	}
	s.tlsFiles, s.tlsConfig = l, c
	return nil
}
