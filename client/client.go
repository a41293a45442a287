package client

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/apollo11/apollo11/wire"
)

// Client is one connection to the main control. It is safe for concurrent
// use; see the package documentation.
type Client struct {
	conn     net.Conn
	r        *wire.Reader
	log      *slog.Logger
	maxFrame int
	done     chan struct{} // closed when the reader goroutine exits
	features []string      // the welcome's optional groups (section 8.1)
	admin    bool          // hello_ok said admin=true (section 8.2)

	mu      sync.Mutex
	seq     uint64
	pending map[string]*call
	err     error // why the client stopped; set once

	wmu       sync.Mutex
	wbuf      []byte // frames waiting to be written
	wspare    []byte
	writing   bool // the writer goroutine runs
	maxUnsent int  // see write
}

// Features returns the optional message groups the main control speaks,
// from its welcome (protocol section 8.1): nil from a v1 main control.
func (c *Client) Features() []string { return slices.Clone(c.features) }

// HasFeature reports whether the main control speaks the group f.
func (c *Client) HasFeature(f wire.Feature) bool { return slices.Contains(c.features, f) }

// Admin reports whether this connection may send the admin messages:
// the main control has no admin token, or Options.AdminToken proved it.
func (c *Client) Admin() bool { return c.admin }

// minMaxUnsent is the least a client queues for a main control that is
// slow to read before calls fail with ErrNotReading (at least four frames
// of the largest size are always allowed).
const minMaxUnsent = 16 << 20

// call is a request waiting for its reply (or, for SubmitWait, for both
// `submitted` and `done`).
type call struct {
	ch   chan *wire.Message // cap 2: never blocks the reader
	wait bool               // stays registered after `submitted`
}

// Close closes the connection; pending and later calls fail with
// ErrClosed. It is safe to call more than once.
func (c *Client) Close() error {
	first := c.stop(ErrClosed)
	err := c.conn.Close()
	<-c.done
	if !first || errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

// stop records why the client stopped, if it is the first reason.
func (c *Client) stop(err error) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return false
	}
	c.err = err
	return true
}

// failure returns why the client stopped.
func (c *Client) failure() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// readLoop routes replies until the connection fails.
func (c *Client) readLoop() {
	defer close(c.done)
	var last *Error // an `error` without req, usually just before a close
	for {
		m, err := c.r.Next()
		if err != nil {
			if last != nil {
				err = fmt.Errorf("%w (after %w)", err, last)
			}
			if c.stop(fmt.Errorf("%w: %w", ErrConnectionLost, err)) {
				c.log.Warn("connection to the main control lost", "err", err)
			}
			if refusal, ok := wire.Refusal(err); ok {
				// Every peer answers a frame it cannot decode before it
				// closes (spec sections 1 and 2).
				c.writeLast(refusal)
			}
			c.conn.Close()
			return
		}
		req, ok := m.Get("req")
		if !ok {
			if m.Type() == "error" {
				last = wire.ErrorReplyOf(m)
				c.log.Warn("error from the main control", "code", last.Code, "message", last.Message)
			} else {
				c.log.Debug("ignoring frame without req", "type", m.Type())
			}
			continue
		}
		c.route(req, m)
	}
}

// route hands m to the call registered under req; a reply nobody waits for
// any more (its caller gave up) is dropped.
func (c *Client) route(req string, m *wire.Message) {
	c.mu.Lock()
	cl := c.pending[req]
	if cl != nil && !(cl.wait && m.Type() == "submitted") {
		delete(c.pending, req)
	}
	c.mu.Unlock()
	if cl == nil {
		c.log.Debug("dropping reply nobody waits for", "type", m.Type(), "req", req)
		return
	}
	select {
	case cl.ch <- m.Clone():
	default:
		c.log.Warn("dropping extra reply", "type", m.Type(), "req", req)
	}
}

// start registers a call under a fresh req and sends typ with the keys
// fill adds.
func (c *Client) start(typ string, fill func(*wire.Builder), wait bool) (*call, string, error) {
	cl := &call{ch: make(chan *wire.Message, 2), wait: wait}
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return nil, "", err
	}
	c.seq++
	req := strconv.FormatUint(c.seq, 36)
	c.pending[req] = cl
	c.mu.Unlock()

	b := wire.Begin(make([]byte, 0, 128), typ)
	b.Str("req", req)
	if fill != nil {
		fill(&b)
	}
	frame, err := b.Finish()
	if err == nil && len(frame)-wire.HeaderLen > c.maxFrame {
		err = &wire.FrameTooLargeError{Size: uint32(min(uint64(len(frame)-wire.HeaderLen), math.MaxUint32)), Max: c.maxFrame}
	}
	if err != nil {
		c.forget(req)
		return nil, "", fmt.Errorf("cannot encode %s: %w", typ, err)
	}
	if err := c.write(frame); err != nil {
		c.forget(req)
		return nil, "", err
	}
	return cl, req, nil
}

// await waits for the next reply of a call.
func (c *Client) await(ctx context.Context, cl *call, req string) (*wire.Message, error) {
	return c.awaitOr(ctx, cl, req, nil)
}

// awaitOr is await that also gives up, with errWatchClosed, when stop is
// closed.
func (c *Client) awaitOr(ctx context.Context, cl *call, req string, stop <-chan struct{}) (*wire.Message, error) {
	select {
	case m := <-cl.ch:
		return m, nil
	case <-stop:
		c.forget(req)
		return nil, errWatchClosed
	case <-ctx.Done():
		c.forget(req)
		return nil, &noReply{ctx.Err()}
	case <-c.done:
		select {
		case m := <-cl.ch: // arrived just before the end
			return m, nil
		default:
			return nil, &noReply{c.failure()}
		}
	}
}

func (c *Client) forget(req string) {
	c.mu.Lock()
	delete(c.pending, req)
	c.mu.Unlock()
}

// roundTrip sends a request and returns its reply, which must be of type
// want; an `error` reply is returned as *Error.
func (c *Client) roundTrip(ctx context.Context, typ, want string, fill func(*wire.Builder)) (*wire.Message, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", typ, err) // nothing sent
	}
	cl, req, err := c.start(typ, fill, false)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", typ, err)
	}
	m, err := c.await(ctx, cl, req)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", typ, err)
	}
	return expect(m, typ, want)
}

// expect checks a reply's type.
func expect(m *wire.Message, typ, want string) (*wire.Message, error) {
	switch m.Type() {
	case want:
		return m, nil
	case "error":
		return nil, fmt.Errorf("%s: %w", typ, wire.ErrorReplyOf(m))
	default:
		return nil, fmt.Errorf("%s: unexpected reply %q", typ, m.Type())
	}
}

// write queues a frame for the writer goroutine, starting it when none
// runs. The caller never writes itself: a main control that stops reading
// would hold it in the socket write, past its context's deadline. What a
// peer leaves unread is bounded by maxUnsent; a call beyond it fails at
// once instead of growing the queue.
func (c *Client) write(frame []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if len(c.wbuf) > 0 && len(c.wbuf)+len(frame) > c.maxUnsent {
		return fmt.Errorf("%w: %d bytes of requests not taken yet", ErrNotReading, len(c.wbuf))
	}
	c.wbuf = append(c.wbuf, frame...)
	if !c.writing {
		c.writing = true
		go c.flush()
	}
	return nil
}

// writeLast queues a last frame and waits, up to wire.RefusalWait, until the
// writer goroutine has written it: the connection is closed next.
func (c *Client) writeLast(frame []byte) {
	deadline := time.Now().Add(wire.RefusalWait)
	_ = c.conn.SetWriteDeadline(deadline)
	if c.write(frame) != nil {
		return
	}
	for time.Now().Before(deadline) {
		c.wmu.Lock()
		idle := !c.writing
		c.wmu.Unlock()
		if idle {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// flush writes queued frames until none is left; a failed write stops the
// client, which fails every pending call.
func (c *Client) flush() {
	c.wmu.Lock()
	var err error
	for len(c.wbuf) > 0 && err == nil {
		b := c.wbuf
		c.wbuf = c.wspare[:0]
		c.wmu.Unlock()
		_, err = c.conn.Write(b)
		c.wmu.Lock()
		c.wspare = b[:0]
	}
	if err != nil {
		c.wbuf = nil
	}
	c.writing = false
	c.wmu.Unlock()
	if err != nil {
		c.stop(fmt.Errorf("%w: %w", ErrConnectionLost, err))
		c.conn.Close()
	}
}
