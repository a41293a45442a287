package maincontrol

import (
	"context"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/internal/tlsfiles"
	"github.com/apollo11/apollo11/internal/tlsfiles/tlsfilestest"
)

// TestTLS_DashboardActsInProcess: with TLS and client certificates on the
// main port, the dashboard's actions still reach the event loop. They go
// through a socketpair, as the main control has no client certificate.
func TestTLS_DashboardActsInProcess(t *testing.T) {
	ca := tlsfilestest.NewCA(t, "ca")
	c, k := ca.Issue(tlsfilestest.Leaf{Name: "maincontrol"})
	free := func() string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		defer ln.Close()
		return ln.Addr().String()
	}
	ready := make(chan struct{})
	s, err := newServer(Config{Listen: free(), HTTPListen: free(), TLS: tlsfiles.Files{Cert: c, Key: k, CA: ca.CAFile},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), OnReady: func(string) { close(ready) }})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.serve(ctx) }()
	defer func() {
		cancel()
		require.NoError(t, <-done)
	}()
	<-ready
	actx, acancel := context.WithTimeout(ctx, 20*time.Second)
	defer acancel()
	require.NoError(t, s.dashActor.Pause(actx, "thumbnails"))
	require.NoError(t, s.dashActor.Resume(actx, "thumbnails"))
}
