//go:build unix

package maincontrol

import (
	"net"
	"strconv"
	"syscall"
)

// boundAddr is the address the listener got, for the logs: with
// --listen 127.0.0.1:0 the port the kernel chose, which an operator needs
// to connect. It falls back to what --listen said.
func (s *Server) boundAddr() string {
	fd, err := s.eng.Dup()
	if err != nil {
		return s.cfg.Listen
	}
	defer syscall.Close(fd)
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		return s.cfg.Listen
	}
	switch a := sa.(type) {
	case *syscall.SockaddrInet4:
		return net.JoinHostPort(net.IP(a.Addr[:]).String(), strconv.Itoa(a.Port))
	case *syscall.SockaddrInet6:
		return net.JoinHostPort(net.IP(a.Addr[:]).String(), strconv.Itoa(a.Port))
	}
	return s.cfg.Listen
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
	fd, err := s.eng.Dup()
	if err == nil {
		err = syscall.Listen(fd, n)
		_ = syscall.Close(fd)
	}
	if err != nil {
		s.log.Warn("cannot set the listen backlog: a burst of connections may exhaust descriptors", "backlog", n, "err", err)
	}
}
