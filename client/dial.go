package client

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"time"

	"github.com/apollo11/apollo11/auth"
	"github.com/apollo11/apollo11/internal/addrlist"
	"github.com/apollo11/apollo11/internal/backoff"
	"github.com/apollo11/apollo11/internal/tlsfiles"
	"github.com/apollo11/apollo11/wire"
)

// DefaultDialTimeout bounds the dial and the handshake when
// Options.DialTimeout is zero.
const DefaultDialTimeout = 10 * time.Second

// Options configures Dial.
type Options struct {
	// Token is the shared secret (see auth.LoadToken). It is needed when
	// the main control announces auth=hmac-sha256.
	Token []byte
	// AdminToken is the second token the admin messages need when the
	// main control has --admin-token-file (protocol section 8.2). It is
	// proven in hello. A wrong one makes Dial fail with auth_failed.
	AdminToken []byte
	// Name is sent as `client=<Name>` for the main control's logs.
	Name string
	// DialTimeout bounds the TCP dial and the handshake (default 10 s).
	DialTimeout time.Duration
	// Logger receives the client's logs. nil means slog.Default().
	Logger *slog.Logger
	// Reconnect says how the client connects again when its connection
	// is lost. The zero value reconnects (see Reconnect).
	Reconnect Reconnect
	// Addrs are more addresses of the same service: the members of a
	// cluster. Dial's addr comes first, then these. The client follows
	// the leader among them (see the package documentation). A leader
	// named by a follower is dialled only when it is in this list.
	Addrs []string
	// AcceptFollower keeps a connection to a follower when no member
	// answers as leader. A follower answers only cluster_status. It is
	// for asking a cluster about itself while it has no leader.
	AcceptFollower bool
	// TLS, when set, runs the connection over TLS (the main control's
	// --tls-cert). Without ServerName the address's host is verified.
	// Its GetClientCertificate may show a newer certificate at each
	// connection.
	TLS *tls.Config
	// Dial, when set, opens the connection in place of TCP. It is a seam
	// for tests and for the main control's in-process dashboard.
	Dial func(ctx context.Context, addr string) (net.Conn, error)
}

// ErrAuthRequired is returned by Dial when the main control requires the
// shared token and Options.Token is empty.
var ErrAuthRequired = errors.New("the main control requires auth (hmac-sha256) but no token is set")

// Dial connects to the main control at addr, sends `hello` and waits for
// `hello_ok`. A refused hello returns *Error (auth_failed,
// unsupported_proto, ...). ctx bounds only the dial and the handshake.
// When this connection is lost, later ones are made in the background
// (see Reconnect). With Options.Addrs, addr may be "". Dial then looks
// for the leader among the addresses, for up to DialTimeout while the
// members it reaches have none.
func Dial(ctx context.Context, addr string, opts Options) (*Client, error) {
	if opts.DialTimeout <= 0 {
		opts.DialTimeout = DefaultDialTimeout
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	rc, err := opts.Reconnect.withDefaults()
	if err != nil {
		return nil, err
	}
	opts.Reconnect = rc
	addrs := addrlist.New(append([]string{addr}, opts.Addrs...)...)
	if addrs.Len() == 0 {
		return nil, errors.New("client: no main control address")
	}
	c := &Client{addrs: addrs, opts: opts, log: opts.Logger,
		pending: make(map[string]*call), ended: make(chan struct{})}
	s, err := c.findLeader(ctx)
	if err != nil {
		return nil, err
	}
	c.sess, c.features, c.admin, c.at = s, s.features, s.admin, s.addr
	go s.readLoop()
	return c, nil
}

// findLeader makes passes over the addresses until one gives a session.
// It goes on, with backoff, while only followers without a leader
// answer: an election is under way. DialTimeout bounds that search.
func (c *Client) findLeader(ctx context.Context) (*session, error) {
	start := time.Now()
	deadline := start.Add(c.opts.DialTimeout)
	bo := backoff.Backoff{Min: c.opts.Reconnect.MinDelay, Max: c.opts.Reconnect.MaxDelay}
	first := c.addrs.First()
	var noLeader error // the last pass that found no leader
	for {
		s, err := c.pass(ctx, first)
		if err != nil && noLeader != nil && ended(ctx) {
			// ctx ended during this pass, often at the deadline: what
			// the pass before found says more than its cut-off dials.
			return nil, waitedFor(noLeader, min(time.Since(start), c.opts.DialTimeout))
		}
		if err == nil || !errors.Is(err, ErrNoLeader) {
			return s, err
		}
		noLeader = err
		if _, ok := errors.AsType[*LeaderOutsideError](err); ok {
			// A leader is elected: waiting cannot put it in the list.
			return nil, err
		}
		// Wait up to the deadline, not short of it: a leader elected in
		// the last stretch still counts. One last pass is made there.
		left := time.Until(deadline)
		if left <= 0 {
			return nil, waitedFor(err, c.opts.DialTimeout)
		}
		t := time.NewTimer(min(bo.Next(), left))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("%w (%w)", waitedFor(err, min(time.Since(start), c.opts.DialTimeout)), ctx.Err())
		}
		first = c.addrs.After(first)
	}
}

// ended says whether ctx is done or past its deadline. A dial cut off by
// the deadline may return before ctx says so.
func ended(ctx context.Context) bool {
	d, ok := ctx.Deadline()
	return ctx.Err() != nil || (ok && !time.Now().Before(d))
}

// waitedFor records in a no-leader error how long Dial looked for one.
func waitedFor(err error, waited time.Duration) error {
	if nl, ok := errors.AsType[*noLeaderError](err); ok {
		nl.waited = waited
	}
	return err
}

// pass dials each address at most once, from first on, until a main
// control that serves requests answers. A follower's leader hint in the
// list is dialled next. One outside it is ignored. With AcceptFollower,
// the first follower is kept when no leader answers. Otherwise a pass
// that reaches only followers fails with ErrNoLeader, or with a
// *LeaderOutsideError when one of them named a leader outside the list.
func (c *Client) pass(ctx context.Context, first string) (*session, error) {
	queue := c.addrs.From(first)
	tried := make(map[string]bool, len(queue))
	var fallback *session
	var outside *LeaderOutsideError
	var errs []error
	noLeader := false // a follower or candidate answered
	for len(queue) > 0 && ctx.Err() == nil {
		addr := queue[0]
		queue = queue[1:]
		if tried[addr] {
			continue
		}
		tried[addr] = true
		s, err := c.dialSession(ctx, addr)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !s.follower {
			if fallback != nil {
				fallback.conn.Close()
			}
			return s, nil
		}
		noLeader = true
		if s.leader == "" {
			errs = append(errs, fmt.Errorf("%s is a %s", addr, s.role))
		} else {
			errs = append(errs, fmt.Errorf("%s is a %s (leader %s)", addr, s.role, s.leader))
		}
		if c.follow(addr, s.leader) && !tried[s.leader] {
			queue = append([]string{s.leader}, queue...)
		} else if outside == nil && c.addrs.Judge(s.leader) == addrlist.Outside {
			outside = &LeaderOutsideError{Follower: addr, Leader: s.leader, Addrs: c.addrs.All()}
		}
		if c.opts.AcceptFollower && fallback == nil {
			fallback = s
		} else {
			s.conn.Close()
		}
	}
	if fallback != nil {
		return fallback, nil
	}
	if outside != nil && ctx.Err() == nil {
		return nil, outside
	}
	if noLeader {
		return nil, &noLeaderError{errs: errs}
	}
	if len(errs) == 1 {
		return nil, errs[0]
	}
	if len(errs) == 0 {
		return nil, ctx.Err()
	}
	return nil, errors.Join(errs...)
}

// follow says whether a follower's leader hint may be dialled. A hint
// outside the configured addresses is logged and refused.
func (c *Client) follow(from, hint string) bool {
	switch c.addrs.Judge(hint) {
	case addrlist.Follow:
		return true
	case addrlist.Outside:
		c.log.Warn("ignoring a leader hint outside the configured addresses",
			"addr", from, "leader", hint, "addrs", c.addrs.String())
	}
	return false
}

// dialSession connects to addr and completes the handshake.
func (c *Client) dialSession(ctx context.Context, addr string) (*session, error) {
	d := net.Dialer{Timeout: c.opts.DialTimeout}
	dial := func(ctx context.Context, addr string) (net.Conn, error) { return d.DialContext(ctx, "tcp", addr) }
	if c.opts.Dial != nil {
		dial = c.opts.Dial
	}
	conn, err := dial(ctx, addr)
	if err != nil {
		return nil, fmt.Errorf("cannot connect to %s: %w", addr, err)
	}
	if c.opts.TLS != nil {
		hctx, cancel := context.WithTimeout(ctx, c.opts.DialTimeout)
		conn, err = tlsfiles.Client(hctx, conn, addr, c.opts.TLS)
		cancel()
		if err != nil {
			return nil, tlsfiles.ExplainRefusal(err, c.opts.TLS)
		}
	}
	s, err := handshake(ctx, conn, c.opts)
	if err != nil {
		conn.Close()
		if c.opts.TLS != nil {
			// With TLS 1.3 the refusal of our certificate comes here.
			err = tlsfiles.ExplainRefusal(err, c.opts.TLS)
		}
		if c.addrs.Len() > 1 {
			err = fmt.Errorf("%s: %w", addr, err)
		}
		return nil, err
	}
	s.c, s.addr = c, addr
	return s, nil
}

// handshake reads `welcome`, sends `hello` and waits for `hello_ok`.
func handshake(ctx context.Context, conn net.Conn, opts Options) (*session, error) {
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if err := conn.SetDeadline(time.Now().Add(opts.DialTimeout)); err != nil {
		return nil, fmt.Errorf("cannot set handshake deadline: %w", err)
	}
	r := wire.NewReader(conn, 0)
	m, err := r.Next()
	if err != nil {
		hint := opts.TLS == nil && wire.NoWelcome(err) && !errors.Is(ctx.Err(), context.Canceled)
		if ctx.Err() != nil || errors.Is(err, os.ErrDeadlineExceeded) {
			err = handshakeErr(ctx, "cannot read welcome", err)
		} else {
			wire.RefuseHandshake(conn, err)
			err = wire.WelcomeReadError(err)
		}
		if hint {
			err = fmt.Errorf("%w (%s)", err, wire.NoWelcomeHint)
		}
		return nil, err
	}
	welcome, err := wire.ParseWelcome(m)
	if err != nil {
		return nil, err
	}
	r.SetMaxFrame(welcome.MaxFrame)

	b := wire.Begin(nil, wire.KindHello)
	b.Str("req", "0")
	b.Uint("proto", 1)
	if opts.Name != "" {
		b.Str("client", opts.Name)
	}
	if mode := welcome.Auth; mode != "none" && mode != "" {
		if len(opts.Token) == 0 {
			return nil, ErrAuthRequired
		}
		b.Str("auth", auth.Sign(opts.Token, welcome.Nonce))
	}
	if len(opts.AdminToken) > 0 {
		b.Str("admin_auth", auth.Sign(opts.AdminToken, welcome.Nonce))
	}
	frame, err := b.Finish()
	if err != nil {
		return nil, fmt.Errorf("cannot encode hello: %w", err)
	}
	if _, err := conn.Write(frame); err != nil {
		return nil, handshakeErr(ctx, "cannot send hello", err)
	}
	for {
		m, err := r.Next()
		if err != nil {
			wire.RefuseHandshake(conn, err)
			return nil, handshakeErr(ctx, "cannot read hello_ok", err)
		}
		switch m.Kind() {
		case wire.KindHelloOK:
			if !stop() {
				// ctx ended just now. Its AfterFunc may set the past
				// deadline at any moment, after the clear below. The
				// client would then be dead on arrival.
				return nil, handshakeErr(ctx, "cannot read hello_ok", context.Cause(ctx))
			}
			if err := conn.SetDeadline(time.Time{}); err != nil {
				return nil, fmt.Errorf("cannot clear handshake deadline: %w", err)
			}
			return &session{conn: conn, r: r, maxFrame: welcome.MaxFrame, done: make(chan struct{}),
				features: welcome.Features, admin: m.Value("admin") == "true",
				follower: !serves(m.Value("role")), role: strings.Clone(m.Value("role")), leader: strings.Clone(m.Value("leader")),
				maxUnsent: max(minMaxUnsent, 4*welcome.MaxFrame)}, nil
		case wire.KindError:
			return nil, fmt.Errorf("hello refused: %w", wire.ErrorReplyOf(m))
		}
	}
}

// serves reports whether a hello_ok's role serves requests. A single
// node says none, a cluster's leader says leader. Followers and
// candidates refuse requests with not_leader.
func serves(role string) bool { return role == "" || role == "leader" }

// handshakeErr prefers ctx's error to the deadline error it caused. When
// DialTimeout ran out, the error matches context.DeadlineExceeded and
// os.ErrDeadlineExceeded, as a dial that times out does. So a caller
// checks one error for "too slow", whichever step it was.
func handshakeErr(ctx context.Context, what string, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("%s: %w", what, ctxErr)
	}
	if errors.Is(err, os.ErrDeadlineExceeded) && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%s: handshake not done within the dial timeout: %w (%w)", what, context.DeadlineExceeded, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}
