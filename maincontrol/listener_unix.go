//go:build unix

package maincontrol

import (
	"net"
	"strconv"
	"syscall"
)

// withListener runs fn on a duplicate of the main port's listening
// socket (it shares the socket), then closes the duplicate.
func (s *Server) withListener(fn func(fd int) error) error {
	fd, err := s.eng.Dup()
	if err != nil {
		return err
	}
	defer syscall.Close(fd)
	return fn(fd)
}

// boundAddr is the address the listener got, for the logs: with
// --listen 127.0.0.1:0 the port the kernel chose, which an operator needs
// to connect. It falls back to what --listen said.
func (s *Server) boundAddr() string {
	addr := s.cfg.Listen
	_ = s.withListener(func(fd int) error {
		sa, err := syscall.Getsockname(fd)
		switch a := sa.(type) {
		case *syscall.SockaddrInet4:
			addr = net.JoinHostPort(net.IP(a.Addr[:]).String(), strconv.Itoa(a.Port))
		case *syscall.SockaddrInet6:
			addr = net.JoinHostPort(net.IP(a.Addr[:]).String(), strconv.Itoa(a.Port))
		}
		return err
	})
	return addr
}

// limitBacklog sets the listen backlog to n (0: leave it): gnet's
// acceptor takes every connection waiting in it at once, before any is
// opened (and so before --max-conns refuses any), so a burst of
// connections needs a descriptor for each, and gnet stops its engine
// when accept fails with EMFILE. listen(2) on a listening socket sets its
// backlog anew; the duplicate shares the socket.
func (s *Server) limitBacklog(n int) {
	if n == 0 {
		return
	}
	if err := s.withListener(func(fd int) error { return syscall.Listen(fd, n) }); err != nil {
		s.log.Warn("cannot set the listen backlog: a burst of connections may exhaust descriptors", "backlog", n, "err", err)
	}
}
