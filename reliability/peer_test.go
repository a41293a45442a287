package reliability_test

import (
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/apollo11/apollo11/auth"
	"github.com/apollo11/apollo11/wire"
)

// peer is a raw wire-v1 connection driven by the test: the suite's
// producers, executors and hostile peers speak the protocol by hand so
// that they see every frame (every result_ack, every error code).
type peer struct {
	conn  net.Conn
	r     *wire.Reader
	w     *wire.Writer
	nonce string
}

// dialPeer connects and reads the welcome.
func dialPeer(addr string) (*peer, error) {
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	return newPeer(conn)
}

// newPeer reads the welcome on a connection made elsewhere (the cluster
// group dials from inside a network namespace).
func newPeer(conn net.Conn) (*peer, error) {
	p := &peer{conn: conn, r: wire.NewReader(conn, 0), w: wire.NewWriter(conn, 0)}
	m, err := p.recv(5 * time.Second)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("no welcome: %w", err)
	}
	if m.Type() != "welcome" {
		conn.Close()
		return nil, fmt.Errorf("first frame is %s, not welcome", m)
	}
	p.nonce = m.Value("nonce")
	return p, nil
}

// message builds a message from key, value pairs.
func message(typ string, kv ...string) *wire.Message {
	m := wire.NewMessage(wire.Kind(typ))
	for i := 0; i+1 < len(kv); i += 2 {
		m.Set(kv[i], kv[i+1])
	}
	return m
}

// write buffers a frame; flush sends what is buffered.
func (p *peer) write(typ string, kv ...string) error { return p.w.Write(message(typ, kv...)) }
func (p *peer) flush() error                         { return p.w.Flush() }

// send writes one frame at once.
func (p *peer) send(typ string, kv ...string) error { return p.w.Send(message(typ, kv...)) }

// recv returns the next frame as a copy, waiting at most timeout (0: no
// deadline).
func (p *peer) recv(timeout time.Duration) (*wire.Message, error) {
	var dl time.Time
	if timeout > 0 {
		dl = time.Now().Add(timeout)
	}
	if err := p.conn.SetReadDeadline(dl); err != nil {
		return nil, err
	}
	return p.r.ReadMessage()
}

// errRefused is a handshake answered with an error frame.
var errRefused = errors.New("handshake refused")

// handshake sends hello (or register) with kv, signed when token is set,
// and returns the reply.
func (p *peer) handshake(typ string, token []byte, kv ...string) (*wire.Message, error) {
	if token != nil {
		kv = append(kv, "auth", auth.Sign(token, p.nonce))
	}
	if err := p.send(typ, kv...); err != nil {
		return nil, err
	}
	m, err := p.recv(10 * time.Second)
	if err != nil {
		return nil, err
	}
	if m.Type() == "error" {
		return m, fmt.Errorf("%w: %s", errRefused, m)
	}
	return m, nil
}

// dialClient connects and says hello.
func dialClient(addr string, token []byte) (*peer, error) {
	p, err := dialPeer(addr)
	if err != nil {
		return nil, err
	}
	if _, err := p.handshake("hello", token, "req", "h"); err != nil {
		p.close()
		return nil, err
	}
	return p, nil
}

// dialExecutor connects and registers.
func dialExecutor(addr, id, types string, slots int, token []byte) (*peer, *wire.Message, error) {
	p, err := dialPeer(addr)
	if err != nil {
		return nil, nil, err
	}
	m, err := p.handshake("register", token, "executor_id", id, "task_types", types, "slots", fmt.Sprint(slots))
	if err != nil {
		p.close()
		return nil, nil, err
	}
	return p, m, nil
}

// reset closes with an RST instead of a FIN.
func (p *peer) reset() {
	if tc, ok := p.conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	p.conn.Close()
}

func (p *peer) close() { p.conn.Close() }

// waitClosed reads until the main control closes the connection and
// returns what it sent meanwhile; err is nil on a clean close (EOF or
// reset), else the read error (a timeout: still open).
func (p *peer) waitClosed(timeout time.Duration) ([]*wire.Message, error) {
	var got []*wire.Message
	deadline := time.Now().Add(timeout)
	for {
		m, err := p.recv(max(time.Until(deadline), time.Millisecond))
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return got, err
			}
			return got, nil
		}
		got = append(got, m)
	}
}
