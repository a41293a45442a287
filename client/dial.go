package client

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"time"

	"github.com/apollo11/apollo11/auth"
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
}

// ErrAuthRequired is returned by Dial when the main control requires the
// shared token and Options.Token is empty.
var ErrAuthRequired = errors.New("the main control requires auth (hmac-sha256) but no token is set")

// Dial connects to the main control at addr, sends `hello` and waits for
// `hello_ok`. A refused hello returns *Error (auth_failed,
// unsupported_proto, ...). ctx bounds only the dial and the handshake.
// When this connection is lost, later ones are made in the background
// (see Reconnect).
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
	c := &Client{addr: addr, opts: opts, log: opts.Logger.With("addr", addr),
		pending: make(map[string]*call), ended: make(chan struct{})}
	s, err := c.dialSession(ctx)
	if err != nil {
		return nil, err
	}
	c.sess, c.features, c.admin = s, s.features, s.admin
	go s.readLoop()
	return c, nil
}

// dialSession connects and completes the handshake.
func (c *Client) dialSession(ctx context.Context) (*session, error) {
	d := net.Dialer{Timeout: c.opts.DialTimeout}
	conn, err := d.DialContext(ctx, "tcp", c.addr)
	if err != nil {
		return nil, fmt.Errorf("cannot connect to %s: %w", c.addr, err)
	}
	s, err := handshake(ctx, conn, c.opts)
	if err != nil {
		conn.Close()
		return nil, err
	}
	s.c = c
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
		if ctx.Err() != nil || errors.Is(err, os.ErrDeadlineExceeded) {
			return nil, handshakeErr(ctx, "cannot read welcome", err)
		}
		wire.RefuseHandshake(conn, err)
		return nil, wire.WelcomeReadError(err)
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
				maxUnsent: max(minMaxUnsent, 4*welcome.MaxFrame)}, nil
		case wire.KindError:
			return nil, fmt.Errorf("hello refused: %w", wire.ErrorReplyOf(m))
		}
	}
}

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
