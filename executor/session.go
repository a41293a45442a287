package executor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apollo11/apollo11/auth"
	"github.com/apollo11/apollo11/wire"
)

// Fallbacks for a `registered` reply that lacks its timings.
const (
	fallbackTimeout = 15 * time.Second
)

// session is one registered connection to the main control. Its reader
// goroutine handles incoming frames. The session goroutine sends
// heartbeats. Anyone may send through out.
type session struct {
	e         *Executor
	addr      string // the address dialled
	conn      net.Conn
	r         *wire.Reader
	wd        *watchdogReader // under r: notified of every whole frame
	out       *outbox
	log       *slog.Logger
	maxFrame  int
	slots     int // registered: at most as many as a heartbeat can list
	heartbeat time.Duration
	timeout   time.Duration

	done    chan struct{} // closed when the reader goroutine exits
	readErr error         // why it exited; read after done
	byeAck  chan struct{} // closed on bye_ack
	byeOnce sync.Once

	mu      sync.Mutex
	reqSeq  uint64
	waiters map[string]chan *wire.Message // state_get replies by req
}

// handshake reads `welcome`, sends `register` and waits for `registered`.
// An `error` reply is returned as *ServerError.
func (e *Executor) handshake(conn net.Conn, addr string) (*session, error) {
	wd := newWatchdogReader(conn, e.cfg.DialTimeout)
	r := wire.NewReader(wd, 0)
	deadline := time.Now().Add(e.cfg.DialTimeout)
	if err := conn.SetDeadline(deadline); err != nil {
		return nil, fmt.Errorf("cannot set handshake deadline: %w", err)
	}
	m, err := r.Next()
	if err != nil {
		wire.RefuseHandshake(conn, err)
		if e.cfg.TLS == nil && wire.NoWelcome(err) {
			return nil, fmt.Errorf("%w (%s)", wire.WelcomeReadError(err), wire.NoWelcomeHint)
		}
		return nil, wire.WelcomeReadError(err)
	}
	welcome, err := wire.ParseWelcome(m)
	if err != nil {
		return nil, err
	}
	if welcome.Proto != "" && welcome.Proto != "1" {
		e.log.Warn("main control speaks another protocol version; registering with proto=1", "proto", welcome.Proto)
	}
	r.SetMaxFrame(welcome.MaxFrame)
	slots := e.cfg.Slots
	if fit := heartbeatSlots(welcome.MaxFrame); fit < slots {
		slots = fit
		e.log.Warn("registering fewer slots than configured: a heartbeat listing more running tasks could exceed the main control's max_frame",
			"slots", e.cfg.Slots, "registered_slots", slots, "max_frame", welcome.MaxFrame)
	}

	frame, err := e.registerFrame(addr, welcome.Auth, welcome.Nonce, slots, welcome.MaxFrame)
	if err != nil {
		return nil, err
	}
	if _, err := conn.Write(frame); err != nil {
		return nil, fmt.Errorf("cannot send register: %w", err)
	}
	for {
		m, err := r.Next()
		if err != nil {
			wire.RefuseHandshake(conn, err)
			return nil, fmt.Errorf("cannot read registered: %w", err)
		}
		switch m.Kind() {
		case wire.KindRegistered:
			s, err := e.newSession(conn, r, welcome.MaxFrame, slots, m)
			if err != nil {
				return nil, err
			}
			s.wd, s.addr = wd, addr
			wd.rewatch(s.timeout) // from now on the watchdog of timeout_ms
			if err := conn.SetWriteDeadline(time.Time{}); err != nil {
				s.out.close()
				return nil, fmt.Errorf("cannot clear handshake deadline: %w", err)
			}
			return s, nil
		case wire.KindError:
			if refusal := wire.ErrorReplyOf(m); refusal.Code == wire.CodeNotLeader {
				return nil, &notLeaderError{refusal: refusal, leader: strings.Clone(m.Value("leader"))}
			}
			return nil, fmt.Errorf("register refused: %w", wire.ErrorReplyOf(m))
		default:
			e.log.Debug("ignoring frame before registered", "type", m.Type())
		}
	}
}

// registerFrame builds `register`, signed when the main control asks,
// with the handlers' descriptions that fit in maxFrame.
func (e *Executor) registerFrame(addr, authMode, nonce string, slots, maxFrame int) ([]byte, error) {
	b := wire.Begin(nil, wire.KindRegister)
	b.Uint("proto", 1)
	b.Str("executor_id", e.cfg.ID)
	e.mu.Lock()
	types, descs := e.types, e.descs
	e.mu.Unlock()
	b.List("task_types", types)
	b.Uint("slots", uint64(slots))
	// Room for auth, the one key that follows.
	e.logLeftOut("register", appendDescriptions(&b, descs, types, maxFrame, 1, 80))
	switch {
	case authMode == "none" || authMode == "":
		if e.cfg.Token != nil {
			// Wire v1's auth is one-way. A main control proves nothing to
			// the executor. One that does not ask for the token may be
			// another program at the address. Tasks, exec's included,
			// come from whoever answers there.
			e.log.Warn("the main control does not ask for the token: it may not be the one configured",
				"addr", addr, "auth", authMode)
		}
	case e.cfg.Token == nil:
		e.log.Error("the main control requires auth but no token is configured", "auth", authMode)
	default:
		b.Str("auth", auth.Sign(e.cfg.Token, nonce))
	}
	frame, err := b.Finish()
	if err != nil {
		return nil, fmt.Errorf("cannot encode register: %w", err)
	}
	return frame, nil
}

// newSession reads the timings of `registered`.
func (e *Executor) newSession(conn net.Conn, r *wire.Reader, maxFrame, slots int, reg *wire.Message) (*session, error) {
	timeout, err := reg.DurationOr("timeout_ms", fallbackTimeout)
	if err != nil {
		return nil, fmt.Errorf("bad registered: %w", err)
	}
	if timeout <= 0 {
		timeout = fallbackTimeout
	}
	hb, err := reg.DurationOr("heartbeat_ms", timeout/3)
	if err != nil {
		return nil, fmt.Errorf("bad registered: %w", err)
	}
	if hb <= 0 {
		hb = timeout / 3
	}
	return &session{
		e:         e,
		conn:      conn,
		r:         r,
		out:       newOutbox(conn, timeout, maxUnsent(maxFrame)),
		log:       e.log.With("conn", conn.LocalAddr().String()),
		maxFrame:  maxFrame,
		slots:     slots,
		heartbeat: hb,
		timeout:   timeout,
		done:      make(chan struct{}),
		byeAck:    make(chan struct{}),
		waiters:   make(map[string]chan *wire.Message),
	}, nil
}

// serve runs the reader goroutine and sends heartbeats until the
// connection fails or ctx is done.
func (s *session) serve(ctx context.Context) error {
	go s.readLoop()
	t := time.NewTicker(s.heartbeat)
	defer t.Stop()
	var seq uint64
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-s.done:
			return s.readErr
		case <-t.C:
			seq++
			s.e.sendHeartbeat(s, seq)
		}
	}
}

// readLoop reads and handles frames until the connection fails or nothing
// arrives for timeout_ms.
func (s *session) readLoop() {
	defer close(s.done)
	for {
		m, err := s.r.Next()
		if err != nil {
			if refusal, ok := wire.Refusal(err); ok {
				// Every peer answers a frame it cannot decode before it
				// closes (spec sections 1 and 2), so the main control's
				// log says why this executor left.
				_ = s.out.send(refusal)
				_ = s.out.flushAll(wire.RefusalWait)
			}
			if errors.Is(err, os.ErrDeadlineExceeded) {
				err = fmt.Errorf("no frame from the main control for %v: %w", s.timeout, err)
			}
			if werr := s.out.failure(); werr != nil {
				err = werr // a failed write closed the connection: say why
			}
			s.readErr = err
			return
		}
		s.wd.frame()
		s.e.handleFrame(s, m)
	}
}

// watchdogReader reads from a connection. It fails with
// os.ErrDeadlineExceeded when no whole frame has arrived for timeout. Spec
// section 4 says an executor that gets no frame for timeout_ms reconnects.
// So a main control that trickles a frame it never finishes does not keep
// the executor waiting. The reader of frames calls frame after each one.
// The next Read comes once the frames already buffered are handled. It
// takes that as the time of the last frame. So the clock is read once per
// Read, not once per frame. The deadline in force moves only when it is
// later than the one wanted, or more than timeout/16 before it. That
// keeps deadline updates off the per-read path. A deadline that fires
// early because of it is set again.
type watchdogReader struct {
	conn    net.Conn
	timeout time.Duration
	last    time.Time // when the last whole frame arrived, or the watch began
	framed  bool      // a whole frame arrived since last was set
	armed   time.Time // the read deadline in force
}

func newWatchdogReader(conn net.Conn, timeout time.Duration) *watchdogReader {
	return &watchdogReader{conn: conn, timeout: timeout, last: time.Now()}
}

// frame notes that a whole frame arrived.
func (w *watchdogReader) frame() { w.framed = true }

// rewatch starts the watch again with a new timeout.
func (w *watchdogReader) rewatch(timeout time.Duration) { w.timeout, w.last = timeout, time.Now() }

func (w *watchdogReader) arm(deadline time.Time) error {
	if err := w.conn.SetReadDeadline(deadline); err != nil {
		return err
	}
	w.armed = deadline
	return nil
}

func (w *watchdogReader) Read(p []byte) (int, error) {
	if w.framed {
		w.last, w.framed = time.Now(), false
	}
	if want := w.last.Add(w.timeout); w.armed.After(want) || want.Sub(w.armed) > w.timeout/16 {
		if err := w.arm(want); err != nil {
			return 0, err
		}
	}
	for {
		n, err := w.conn.Read(p)
		if want := w.last.Add(w.timeout); n == 0 && errors.Is(err, os.ErrDeadlineExceeded) && time.Now().Before(want) {
			if err := w.arm(want); err != nil {
				return 0, err
			}
			continue
		}
		return n, err
	}
}

// send queues frame and flushes.
func (s *session) send(frame []byte) error {
	if err := s.out.send(frame); err != nil {
		return fmt.Errorf("%w: %w", ErrDisconnected, err)
	}
	return nil
}

// request sends a frame of type typ with a fresh req, and waits for the
// reply carrying that req. fill adds the other keys.
func (s *session) request(ctx context.Context, fill func(*wire.Builder), typ wire.Kind) (*wire.Message, error) {
	ch := make(chan *wire.Message, 1)
	s.mu.Lock()
	s.reqSeq++
	req := strconv.FormatUint(s.reqSeq, 36)
	s.waiters[req] = ch
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.waiters, req)
		s.mu.Unlock()
	}()

	b := wire.Begin(nil, typ)
	b.Str("req", req)
	fill(&b)
	frame, err := b.Finish()
	if err != nil {
		return nil, err
	}
	if size := len(frame) - wire.HeaderLen; size > s.maxFrame {
		// Sent, it would cost the connection (spec section 1).
		return nil, fmt.Errorf("%w: %d bytes, max_frame %d", ErrRequestTooLarge, size, s.maxFrame)
	}
	if err := s.send(frame); err != nil {
		return nil, err
	}
	select {
	case m := <-ch:
		if m.Kind() == wire.KindError {
			return nil, wire.ErrorReplyOf(m)
		}
		return m, nil
	case <-s.done:
		return nil, ErrDisconnected
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

// deliver hands a reply to the request waiting for its req. A reply nobody
// waits for any more is dropped.
func (s *session) deliver(m *wire.Message) {
	req := m.Value("req")
	s.mu.Lock()
	ch := s.waiters[req]
	delete(s.waiters, req)
	s.mu.Unlock()
	if ch == nil {
		s.log.Debug("dropping reply nobody waits for", "type", m.Type(), "req", req)
		return
	}
	ch <- m.Clone()
}
