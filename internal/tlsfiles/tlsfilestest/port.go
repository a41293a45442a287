package tlsfilestest

import (
	"context"
	"crypto/tls"
	"net"
	"sync"
	"testing"
	"time"
)

// HandshakeOnlyPort serves TLS handshakes as a main control's TLS port
// does: it waits up to wait for a peer's hello, then closes, and never
// sends welcome. It stops when t ends.
func HandshakeOnlyPort(t testing.TB, cfg *tls.Config, wait time.Duration) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer conn.Close()
				ctx, cancel := context.WithTimeout(context.Background(), wait)
				defer cancel()
				_ = tls.Server(conn, cfg).HandshakeContext(ctx)
			})
		}
	})
	return ln.Addr().String()
}
