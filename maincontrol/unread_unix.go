//go:build unix

package maincontrol

import "golang.org/x/sys/unix"

// inputWaiting reports whether the socket fd has bytes to read. It peeks
// without blocking and takes nothing. gnet's Fd is safe off the loop,
// and gnet closes the descriptor only after OnClose, which waits for
// Server.mu.
func inputWaiting(fd int) bool {
	var b [1]byte
	n, _, err := unix.Recvfrom(fd, b[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
	return err == nil && n > 0
}
