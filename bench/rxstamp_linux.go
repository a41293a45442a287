package bench

import (
	"io"
	"net"
	"syscall"
	"time"
	"unsafe"
)

// rxStamper reads a TCP connection with recvmsg.
// It keeps the kernel's software receive timestamp (SO_TIMESTAMPNS)
// of the last segment each read returned.
// That is when the bytes reached this host's socket.
// It comes before the harness's own goroutine was scheduled to read them.
type rxStamper struct {
	rc  syscall.RawConn
	oob []byte
}

// newRxStamper turns receive timestamps on for c.
// It returns nil when the connection or the kernel does not offer them.
func newRxStamper(c net.Conn) *rxStamper {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_TIMESTAMPNS, 1)
	}); err != nil || serr != nil {
		return nil
	}
	return &rxStamper{rc: rc, oob: make([]byte, syscall.CmsgSpace(int(unsafe.Sizeof(syscall.Timespec{}))))}
}

// read reads into p like net.Conn.Read and returns the arrival time of
// the newest bytes read.
func (s *rxStamper) read(p []byte) (int, time.Time, error) {
	var n, oobn int
	var rerr error
	err := s.rc.Read(func(fd uintptr) bool {
		n, oobn, _, _, rerr = syscall.Recvmsg(int(fd), p, s.oob, 0)
		return rerr != syscall.EAGAIN
	})
	if err == nil {
		err = rerr
	}
	if err != nil {
		return 0, time.Time{}, err
	}
	if n == 0 {
		return 0, time.Time{}, io.EOF
	}
	at := stampOf(s.oob[:oobn])
	if at.IsZero() {
		// The kernel turns receive timestamps on for the whole host
		// from a work queue, after the first socket asks.
		// Segments that arrived before that carry none.
		// So take the read's own time, which errs long, as a late stamp does.
		at = time.Now()
	}
	return n, at, nil
}

// stampOf finds the SCM_TIMESTAMPNS control message.
func stampOf(oob []byte) time.Time {
	msgs, err := syscall.ParseSocketControlMessage(oob)
	if err != nil {
		return time.Time{}
	}
	for _, m := range msgs {
		if m.Header.Level == syscall.SOL_SOCKET && m.Header.Type == syscall.SCM_TIMESTAMPNS &&
			len(m.Data) >= int(unsafe.Sizeof(syscall.Timespec{})) {
			ts := (*syscall.Timespec)(unsafe.Pointer(&m.Data[0]))
			return time.Unix(int64(ts.Sec), int64(ts.Nsec))
		}
	}
	return time.Time{}
}
