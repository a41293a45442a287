package executor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/apollo11/apollo11/internal/addrlist"
	"github.com/apollo11/apollo11/internal/backoff"
	"github.com/apollo11/apollo11/internal/tlsfiles"
	"github.com/apollo11/apollo11/wire"
)

// connectLoop connects, serves and reconnects with backoff until ctx is
// done or the executor is leaving.
//
// With several addresses, a failed or lost connection moves on to the
// next one. A follower's not_leader naming an address of the list is
// followed at once, up to once per address in a row; then the backoff
// applies, as two stale followers could name each other.
func (e *Executor) connectLoop(ctx context.Context) {
	bo := backoff.Backoff{Min: e.cfg.BackoffMin, Max: e.cfg.BackoffMax}
	addr, hops := e.addrs.First(), 0
	for {
		registered, timeout, served, err := e.connectOnce(ctx, addr)
		if ctx.Err() != nil || e.isLeaving() {
			return
		}
		from := addr
		addr = e.addrs.After(addr)
		if registered {
			hops = 0
		}
		if hint, ok := errors.AsType[*notLeaderError](err); ok {
			switch e.addrs.Judge(hint.leader) {
			case addrlist.Follow:
				addr = hint.leader
				if hops < e.addrs.Len() {
					hops++
					e.log.Info("following the leader", "addr", from, "leader", addr)
					continue
				}
			case addrlist.Outside:
				e.log.Warn("ignoring a leader hint outside the configured addresses",
					"addr", from, "leader", hint.leader, "addrs", e.addrs.String())
			}
		}
		if registered {
			// A main control that restarts waits one timeout_ms for its
			// executors to list their tasks, then moves them on (spec
			// section 4). Retrying at least every half of it gets back
			// inside that window.
			bo.Max = min(e.cfg.BackoffMax, max(e.cfg.BackoffMin, timeout/2))
			// The doubling starts again only after a connection that
			// held. One may drop soon after each registration, from a
			// flapping main control or a proxy that cuts connections.
			// It is retried ever more slowly, up to the cap, like one
			// that cannot be reached.
			if served >= min(healthySession, bo.Max) {
				bo.Reset()
			}
		}
		d := bo.Next()
		hops = 0
		e.logConnError(from, err, registered, d)
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// healthySession is how long a registered connection must last for the
// reconnect delay to start again from BackoffMin. It is the delay's cap
// when that is shorter.
const healthySession = 10 * time.Second

// connectOnce runs one connection, to dial, handshake and serve. registered
// says whether the handshake completed. timeout is then the main control's
// timeout_ms, and served how long the connection lasted after it.
func (e *Executor) connectOnce(ctx context.Context, addr string) (registered bool, timeout, served time.Duration, err error) {
	conn, err := e.dial(ctx, addr)
	if err != nil {
		return false, 0, 0, fmt.Errorf("cannot connect: %w", tlsfiles.ExplainRefusal(err, e.cfg.TLS))
	}
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	defer conn.Close()

	s, err := e.handshake(conn, addr)
	if err != nil {
		// With TLS 1.3 the refusal of our certificate comes here.
		return false, 0, 0, tlsfiles.ExplainRefusal(err, e.cfg.TLS)
	}
	start := time.Now()
	e.activate(s)
	err = s.serve(ctx)
	conn.Close()
	s.out.close()
	<-s.done
	e.deactivate(s)
	return true, s.timeout, time.Since(start), err
}

func (e *Executor) dial(ctx context.Context, addr string) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, e.cfg.DialTimeout)
	defer cancel()
	var conn net.Conn
	var err error
	if e.cfg.Dial != nil {
		conn, err = e.cfg.Dial(ctx, addr)
	} else {
		var d net.Dialer
		conn, err = d.DialContext(ctx, "tcp", addr)
	}
	if err != nil || e.cfg.TLS == nil {
		return conn, err
	}
	return tlsfiles.Client(ctx, conn, addr, e.cfg.TLS)
}

// notLeaderError is a follower's refusal of register (protocol section
// 8.13). leader is the leader it names, which is followed only when it is
// one of the executor's addresses.
type notLeaderError struct {
	refusal *ServerError
	leader  string
}

func (e *notLeaderError) Error() string {
	if e.leader == "" {
		return fmt.Sprintf("register refused: %v", e.refusal)
	}
	return fmt.Sprintf("register refused: %v (leader %s)", e.refusal, e.leader)
}

func (e *notLeaderError) Unwrap() error { return e.refusal }

// logConnError logs why a connection ended and when the next attempt is.
func (e *Executor) logConnError(addr string, err error, registered bool, retryIn time.Duration) {
	level := slog.LevelWarn
	var se *ServerError
	if errors.As(err, &se) && se.Code == wire.CodeAuthFailed {
		level = slog.LevelError
	}
	msg := "cannot register with the main control"
	if registered {
		msg = "connection to the main control lost"
	}
	e.log.Log(context.Background(), level, msg, "addr", addr, "err", err, "retry_in", retryIn)
}
