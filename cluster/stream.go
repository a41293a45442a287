package cluster

import (
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/hashicorp/raft"
)

// tcpStream is Raft's plain TCP stream layer on a listener of ours, so
// that a bad address is our error, not raft's, and accepts are capped.
type tcpStream struct {
	net.Listener
	advertise net.Addr
}

func newTCPStream(addr string, maxConns int, log *slog.Logger) (*tcpStream, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("cannot listen for raft on %s: %w", addr, err)
	}
	adv, err := net.ResolveTCPAddr("tcp", addr)
	if err != nil || adv.IP == nil || adv.IP.IsUnspecified() {
		adv = ln.Addr().(*net.TCPAddr)
	}
	return &tcpStream{Listener: newCapListener(ln, maxConns, log), advertise: adv}, nil
}

func (s *tcpStream) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	return net.DialTimeout("tcp", string(address), timeout)
}

func (s *tcpStream) Addr() net.Addr { return s.advertise }
