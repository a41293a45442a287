package bench

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/apollo11/apollo11/auth"
	"github.com/apollo11/apollo11/internal/tlsfiles"
	"github.com/apollo11/apollo11/wire"
)

// readChunk is the size of a connection's read buffer and of each read.
const readChunk = 256 << 10

// frameConn reads frames in batches.
// A batch is one read, then every whole frame that read completed.
// Callers answer a batch with one write.
// That is how the raw producers and executors pipeline.
// Writes may come from several goroutines and are serialised by a mutex.
type frameConn struct {
	c          net.Conn
	dec        wire.Decoder
	buf        []byte
	start, end int
	// rx, when not nil, reads with the kernel's receive timestamps.
	// arrived is the timestamp of the newest bytes of the last read.
	rx      *rxStamper
	arrived time.Time

	wmu sync.Mutex
}

func newFrameConn(c net.Conn) *frameConn { return newFrameConnSize(c, readChunk) }

// newFrameConnSize uses a read buffer of size bytes.
// The buffer grows for a frame that does not fit.
func newFrameConnSize(c net.Conn, size int) *frameConn {
	return &frameConn{c: c, buf: make([]byte, max(size, 512))}
}

// readBatch reads once and calls fn for each whole frame now buffered.
// The message borrows from the buffer, so it is valid only during fn.
func (f *frameConn) readBatch(fn func(m *wire.Message) error) error {
	if f.start > 0 {
		f.end = copy(f.buf, f.buf[f.start:f.end])
		f.start = 0
	}
	if f.end == len(f.buf) { // one frame bigger than the buffer
		nb := make([]byte, 2*len(f.buf))
		copy(nb, f.buf[:f.end])
		f.buf = nb
	}
	var n int
	var err error
	if f.rx != nil {
		n, f.arrived, err = f.rx.read(f.buf[f.end:])
	} else {
		n, err = f.c.Read(f.buf[f.end:])
	}
	f.end += n
	for f.end > f.start {
		m, used, derr := f.dec.Decode(f.buf[f.start:f.end])
		if derr != nil {
			return derr
		}
		if m == nil {
			break
		}
		f.start += used
		if ferr := fn(m); ferr != nil {
			return ferr
		}
	}
	return err
}

// next returns the next frame, reading as needed.
// It is for handshakes, before the batch loop starts.
// The message is valid until the next call.
func (f *frameConn) next() (*wire.Message, error) {
	for {
		if f.end > f.start {
			m, used, err := f.dec.Decode(f.buf[f.start:f.end])
			if err != nil {
				return nil, err
			}
			if m != nil {
				f.start += used
				return m, nil
			}
		}
		if f.start > 0 {
			f.end = copy(f.buf, f.buf[f.start:f.end])
			f.start = 0
		}
		if f.end == len(f.buf) {
			f.buf = append(f.buf, make([]byte, len(f.buf))...)
		}
		n, err := f.c.Read(f.buf[f.end:])
		f.end += n
		if err != nil && n == 0 {
			return nil, err
		}
	}
}

// write writes whole frames, serialised with other writers.
func (f *frameConn) write(b []byte) error {
	f.wmu.Lock()
	defer f.wmu.Unlock()
	_, err := f.c.Write(b)
	return err
}

// ErrRefused is returned when the main control answers a handshake with an
// error frame.
var ErrRefused = errors.New("main control refused")

// dialWelcome connects and reads the welcome frame, returning the nonce.
// A non-nil tlsConf runs the connection over TLS.
func dialWelcome(addr string, tlsConf *tls.Config, timeout time.Duration) (*frameConn, string, error) {
	return dialWelcomeSize(addr, tlsConf, timeout, readChunk)
}

// dialWelcomeSize is dialWelcome with a read buffer of size bytes.
func dialWelcomeSize(addr string, tlsConf *tls.Config, timeout time.Duration, size int) (*frameConn, string, error) {
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return nil, "", err
	}
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	if tlsConf != nil {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		tc, err := tlsfiles.Client(ctx, c, addr, tlsConf)
		cancel()
		if err != nil {
			return nil, "", err
		}
		c = tc
	}
	f := newFrameConnSize(c, size)
	_ = c.SetDeadline(time.Now().Add(timeout))
	m, err := f.next()
	if err != nil {
		c.Close()
		return nil, "", fmt.Errorf("%s: %w", addr, wire.WelcomeReadError(err))
	}
	if m.Kind() != wire.KindWelcome {
		c.Close()
		return nil, "", fmt.Errorf("%w: first frame from %s is %q, not welcome", ErrRefused, addr, m.Type())
	}
	nonce := m.Value("nonce")
	_ = c.SetDeadline(time.Time{})
	return f, nonce, nil
}

// dialClient connects as a client (hello) and returns the connection.
func dialClient(addr string, tlsConf *tls.Config, token []byte, name string, timeout time.Duration) (*frameConn, error) {
	f, nonce, err := dialWelcome(addr, tlsConf, timeout)
	if err != nil {
		return nil, err
	}
	b := wire.Begin(nil, wire.KindHello)
	b.Str("req", "h")
	b.Str("client", name)
	if token != nil {
		b.Str("auth", auth.Sign(token, nonce))
	}
	if _, err := f.handshake(b, "hello", "hello_ok", timeout); err != nil {
		return nil, err
	}
	return f, nil
}

// dialExecutor connects as an executor and returns the connection and the
// announced heartbeat interval.
func dialExecutor(addr string, tlsConf *tls.Config, token []byte, id string, types []string, slots int, timeout time.Duration, bufSize int) (*frameConn, time.Duration, error) {
	f, nonce, err := dialWelcomeSize(addr, tlsConf, timeout, bufSize)
	if err != nil {
		return nil, 0, err
	}
	b := wire.Begin(nil, wire.KindRegister)
	b.Str("proto", "1")
	b.Str("executor_id", id)
	b.List("task_types", types)
	b.Uint("slots", uint64(slots))
	if token != nil {
		b.Str("auth", auth.Sign(token, nonce))
	}
	hb, err := f.handshake(b, "register", "registered", timeout)
	if err != nil {
		return nil, 0, err
	}
	return f, hb, nil
}

// handshake sends the built frame (of type sent) and waits for the wanted reply type.
// It returns the reply's heartbeat_ms as a duration, 0 when absent.
// On error the connection is closed.
func (f *frameConn) handshake(b wire.Builder, sent, want string, timeout time.Duration) (time.Duration, error) {
	frame, err := b.Finish()
	if err == nil {
		_ = f.c.SetDeadline(time.Now().Add(timeout))
		err = f.write(frame)
	}
	var m *wire.Message
	if err == nil {
		m, err = f.next()
	}
	if err != nil {
		f.c.Close()
		return 0, err
	}
	if m.Type() != want {
		f.c.Close()
		if m.Kind() == wire.KindError {
			return 0, fmt.Errorf("%w: error code=%s message=%s", ErrRefused, m.Value("code"), m.Value("message"))
		}
		// Not a refusal. A peer that answers out of turn, or speaks something else,
		// would otherwise read "refused: hello_ok code= message=".
		return 0, fmt.Errorf("unexpected reply %s to %s (want %s or error)", m.Type(), sent, want)
	}
	_ = f.c.SetDeadline(time.Time{})
	ms, _ := strconv.ParseUint(m.Value("heartbeat_ms"), 10, 64)
	return time.Duration(ms) * time.Millisecond, nil
}
