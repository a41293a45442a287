package bench

import (
	"context"
	"crypto/tls"
	"fmt"
	"strconv"
	"time"

	"github.com/apollo11/apollo11/wire"
)

// request sends one client request and returns the reply with the same
// req, as a copy. Other frames arriving meanwhile are skipped.
func request(fc *frameConn, b wire.Builder, req string, timeout time.Duration) (*wire.Message, error) {
	b.Str("req", req)
	frame, err := b.Finish()
	if err != nil {
		return nil, err
	}
	_ = fc.c.SetDeadline(time.Now().Add(timeout))
	defer fc.c.SetDeadline(time.Time{})
	if err := fc.write(frame); err != nil {
		return nil, err
	}
	for {
		m, err := fc.next()
		if err != nil {
			return nil, err
		}
		if m.Value("req") == req {
			return m.Clone(), nil
		}
	}
}

// stats asks a main control for its stats.
func stats(fc *frameConn) (*wire.Message, error) {
	m, err := request(fc, wire.Begin(nil, wire.KindStats), "stats", 10*time.Second)
	if err != nil {
		return nil, err
	}
	if m.Kind() != wire.KindStats {
		return nil, fmt.Errorf("%w: stats answered %s code=%s", ErrRefused, m.Type(), m.Value("code"))
	}
	return m, nil
}

// statUint returns one numeric stats value (0 when absent).
func statUint(m *wire.Message, k string) uint64 {
	n, _ := strconv.ParseUint(m.Value(k), 10, 64)
	return n
}

// waitExecutors polls stats until at least n executors are registered.
func waitExecutors(ctx context.Context, addr string, tlsConf *tls.Config, token []byte, n int) error {
	fc, err := dialClient(addr, tlsConf, token, "apollo11-bench", 10*time.Second)
	if err != nil {
		return err
	}
	defer fc.c.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		m, err := stats(fc)
		if err != nil {
			return err
		}
		if statUint(m, "executors") >= uint64(n) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("only %d of %d executors registered after 30 s", statUint(m, "executors"), n)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}
