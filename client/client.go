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

	"github.com/apollo11/apollo11/internal/addrlist"
	"github.com/apollo11/apollo11/wire"
)

// Client is a connection to the main control, made again when it is lost
// (see Reconnect). It is safe for concurrent use. See the package
// documentation.
type Client struct {
	addrs addrlist.List // the configured addresses: leader hints must be in it
	opts  Options
	log   *slog.Logger

	mu      sync.Mutex
	seq     uint64
	pending map[string]*call
	sess    *session      // nil while reconnecting
	up      chan struct{} // closed once sess is set again
	down    error         // why the latest connection was lost
	err     error         // why the client ended for good; set once
	ended   chan struct{} // closed when err is set
	loops   sync.WaitGroup
	// draining is a connection a member refused a request on. It is
	// read on until the requests sent before the refusal are answered.
	draining *session
	// features and admin are the latest connection's. A restarted main
	// control may speak other groups, or have another admin token.
	features []string
	admin    bool
	at       string    // the address of the latest connection
	hint     string    // the leader a not_leader named, dialled first
	hopped   time.Time // when a leader hint was last followed without delay
}

// Features returns the optional message groups the main control speaks,
// from its latest welcome (protocol section 8.1). A v1 main control gives
// nil.
func (c *Client) Features() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.features)
}

// HasFeature reports whether the main control speaks the group f.
func (c *Client) HasFeature(f wire.Feature) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Contains(c.features, f)
}

// Admin reports whether this connection may send the admin messages. It
// may when the main control has no admin token, or Options.AdminToken
// proved it.
func (c *Client) Admin() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.admin
}

// minMaxUnsent is the least a client queues for a main control that is
// slow to read, before calls fail with ErrNotReading. At least four
// frames of the largest size are always allowed.
const minMaxUnsent = 16 << 20

// reply is what a call receives, a frame or why none will come.
type reply struct {
	m   *wire.Message
	err error
}

// call is a request waiting for its reply (or, for SubmitWait, for both
// `submitted` and `done`).
type call struct {
	ch   chan reply // cap 2: never blocks the reader
	wait bool       // stays registered after `submitted`
	seq  uint64
	// resend is the frame sent again on the next connection when this
	// one is lost. It is nil when sending it twice could act twice.
	resend []byte
	// frame is the request as sent. refused is set when a follower
	// refused it with not_leader. It changed nothing, so it is sent once
	// more.
	frame   []byte
	refused error
	// answered marks a waiting submit past its `submitted`. It waits for
	// `done` only, which a refusing member need not be waited for.
	answered bool
	// unknown marks a request whose loss leaves its outcome unknown
	// (ErrOutcomeUnknown). Other lost calls report ErrConnectionLost.
	unknown bool
}

// kind says what becomes of a request in flight when the connection is
// lost.
type kind uint8

const (
	idempotent kind = iota // sent again on the next connection
	oneShot                // fails with ErrOutcomeUnknown
)

// Close closes the connection and stops reconnecting. Pending and later
// calls fail with ErrClosed. It is safe to call more than once.
func (c *Client) Close() error {
	c.mu.Lock()
	first := c.err == nil
	s, d := c.sess, c.draining
	if first {
		c.endLocked(ErrClosed)
	}
	c.mu.Unlock()
	var err error
	if s != nil {
		err = s.conn.Close()
		<-s.done
	}
	if d != nil {
		d.grace.Stop()
		d.conn.Close()
		<-d.done
	}
	c.loops.Wait()
	if !first || errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

// endLocked ends the client for good with err. Every pending call fails
// with it. It runs with c.mu held.
func (c *Client) endLocked(err error) {
	c.err = err
	close(c.ended)
	for req, cl := range c.pending {
		delete(c.pending, req)
		cl.deliver(reply{err: cl.lostErr(err)})
	}
}

// lostErr is a pending call's error when the connection ends with err.
func (cl *call) lostErr(err error) error {
	if cl.refused != nil {
		// The member's refusal is the outcome: not applied anywhere.
		return fmt.Errorf("not applied (%w), and not sent to the leader: %w", cl.refused, err)
	}
	if cl.unknown && !errors.Is(err, ErrClosed) {
		err = fmt.Errorf("%w: %w", ErrOutcomeUnknown, err)
	}
	return &noReply{err}
}

func (cl *call) deliver(r reply) bool {
	select {
	case cl.ch <- r:
		return true
	default:
		return false
	}
}

// route hands m, read on s, to the call registered under req. A reply
// nobody waits for any more, as its caller gave up, is dropped. It
// reports whether s is now to be left (see drained).
func (c *Client) route(s *session, req string, m *wire.Message) (left bool) {
	c.mu.Lock()
	cl := c.pending[req]
	if cl != nil {
		if cl.wait && (m.Kind() == wire.KindSubmitted || m.Kind() == wire.KindRunSubmitted) {
			// The task exists. A loss from now on resumes the wait by
			// its id, never by a second submit.
			cl.resend, cl.unknown, cl.answered = nil, false, true
		} else {
			delete(c.pending, req)
		}
	}
	c.answeredLocked(req)
	left = c.drainedLocked(s)
	c.mu.Unlock()
	if cl == nil {
		c.log.Debug("dropping reply nobody waits for", "type", m.Type(), "req", req)
		return left
	}
	if !cl.deliver(reply{m: m.Clone()}) {
		c.log.Warn("dropping extra reply", "type", m.Type(), "req", req)
	}
	return left
}

// start registers a call under a fresh req and sends typ with the keys
// fill adds. While the connection is being made again it waits for it, up
// to ctx's end.
func (c *Client) start(ctx context.Context, typ wire.Kind, fill func(*wire.Builder), k kind, wait bool) (*call, string, error) {
	c.mu.Lock()
	c.seq++
	seq := c.seq
	c.mu.Unlock()
	req := strconv.FormatUint(seq, 36)
	b := wire.Begin(make([]byte, 0, 128), typ)
	b.Str("req", req)
	if fill != nil {
		fill(&b)
	}
	frame, err := b.Finish()
	if err != nil {
		return nil, "", fmt.Errorf("cannot encode %s: %w", typ, err)
	}
	for {
		c.mu.Lock()
		if c.err != nil {
			err := c.err
			c.mu.Unlock()
			return nil, "", err
		}
		s := c.sess
		if s == nil {
			up, down := c.up, c.down
			c.mu.Unlock()
			select {
			case <-up:
			case <-c.ended:
			case <-ctx.Done():
				// Nothing was sent, so this is not ErrNoReply.
				return nil, "", fmt.Errorf("%w (while reconnecting after: %w)", ctx.Err(), down)
			}
			continue
		}
		if err := s.fits(frame); err != nil {
			c.mu.Unlock()
			return nil, "", fmt.Errorf("cannot encode %s: %w", typ, err)
		}
		cl := &call{ch: make(chan reply, 2), wait: wait, seq: seq, unknown: k == oneShot, frame: frame}
		if k == idempotent {
			cl.resend = frame
		}
		c.pending[req] = cl
		c.mu.Unlock()
		if err := s.write(frame, false); err != nil {
			c.forget(req)
			return nil, "", err
		}
		return cl, req, nil
	}
}

// fits checks a frame against the session's max_frame.
func (s *session) fits(frame []byte) error {
	if n := len(frame) - wire.HeaderLen; n > s.maxFrame {
		return &wire.FrameTooLargeError{Size: uint32(min(uint64(n), math.MaxUint32)), Max: s.maxFrame}
	}
	return nil
}

// await waits for the next reply of a call.
func (c *Client) await(ctx context.Context, cl *call, req string) (*wire.Message, error) {
	return c.awaitOr(ctx, cl, req, nil)
}

// awaitOr is await that also gives up, with errWatchClosed, when stop is
// closed.
func (c *Client) awaitOr(ctx context.Context, cl *call, req string, stop <-chan struct{}) (*wire.Message, error) {
	select {
	case r := <-cl.ch:
		return r.m, r.err
	case <-stop:
		c.forget(req)
		return nil, errWatchClosed
	case <-ctx.Done():
		c.forget(req)
		select {
		case r := <-cl.ch: // arrived just before the end
			return r.m, r.err
		default:
			return nil, &noReply{ctx.Err()}
		}
	}
}

func (c *Client) forget(req string) {
	c.mu.Lock()
	delete(c.pending, req)
	left := c.forgotLocked(req)
	c.mu.Unlock()
	if left != nil {
		_ = left.Close()
	}
}

// roundTrip sends a request and returns its reply, which must be of type
// want. An `error` reply is returned as *Error.
func (c *Client) roundTrip(ctx context.Context, typ, want wire.Kind, k kind, fill func(*wire.Builder)) (*wire.Message, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", typ, err) // nothing sent
	}
	cl, req, err := c.start(ctx, typ, fill, k, false)
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
func expect(m *wire.Message, typ, want wire.Kind) (*wire.Message, error) {
	switch m.Kind() {
	case want:
		return m, nil
	case wire.KindError:
		return nil, fmt.Errorf("%s: %w", typ, wire.ErrorReplyOf(m))
	default:
		return nil, fmt.Errorf("%s: unexpected reply %q", typ, m.Type())
	}
}
