package maincontrol_test

import (
	"context"
	"crypto/tls"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/client"
	"github.com/apollo11/apollo11/executor"
	"github.com/apollo11/apollo11/internal/patience"
	"github.com/apollo11/apollo11/internal/syncbuf"
	"github.com/apollo11/apollo11/internal/tlsfiles"
	"github.com/apollo11/apollo11/internal/tlsfiles/tlsfilestest"
	"github.com/apollo11/apollo11/maincontrol"
	"github.com/apollo11/apollo11/maincontrol/core"
	"github.com/apollo11/apollo11/wire"
)

// mtlsSetup is a CA, a main control's files and a peer's files.
type mtlsSetup struct {
	ca                   *tlsfilestest.CA
	serverFiles          tlsfiles.Files
	peerCert, peerKey    string
	serverCert, serverKy string
}

func newMTLS(t *testing.T) mtlsSetup {
	ca := tlsfilestest.NewCA(t, "apollo11 test CA")
	sc, sk := ca.Issue(tlsfilestest.Leaf{Name: "maincontrol"})
	pc, pk := ca.Issue(tlsfilestest.Leaf{Name: "peer"})
	return mtlsSetup{ca: ca, serverFiles: tlsfiles.Files{Cert: sc, Key: sk, CA: ca.CAFile},
		peerCert: pc, peerKey: pk, serverCert: sc, serverKy: sk}
}

// clientTLS is a peer's TLS configuration from its files.
func clientTLS(t *testing.T, f tlsfiles.Files) *tls.Config {
	t.Helper()
	l, err := tlsfiles.Load(f, testLogger())
	require.NoError(t, err)
	return l.ClientConfig("")
}

// TestTLS_ClientAndExecutorOverMutualTLS runs the real client and the real
// executor against the real main control over mutual TLS, with the HMAC
// token on top.
func TestTLS_ClientAndExecutorOverMutualTLS(t *testing.T) {
	m := newMTLS(t)
	token := []byte("0123456789abcdef0123456789abcdef")
	addr := startServer(t, maincontrol.Config{TLS: m.serverFiles, Core: core.Config{Token: token}})
	peer := clientTLS(t, tlsfiles.Files{Cert: m.peerCert, Key: m.peerKey, CA: m.ca.CAFile})

	ex, err := executor.New(executor.Config{Addr: addr, ID: "tls-1", Token: token, TLS: peer, Slots: 1,
		Logger: testLogger(), Handlers: map[string]executor.Handler{
			"echo": executor.HandlerFunc(func(_ context.Context, task *executor.Task) (executor.Result, error) {
				return executor.Result{Out: map[string]string{"x": task.Args["x"]}}, nil
			}),
		}})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	runDone := make(chan error, 1)
	go func() { runDone <- ex.Run(ctx) }()
	defer func() {
		cancel()
		require.NoError(t, <-runDone)
	}()

	wctx, wcancel := context.WithTimeout(context.Background(), patience.Scale(20*time.Second))
	defer wcancel()
	cl, err := client.Dial(wctx, addr, client.Options{Token: token, TLS: peer, Logger: testLogger()})
	require.NoError(t, err)
	defer cl.Close()
	// A frame larger than a TLS record and the pump's buffer crosses both.
	big := strings.Repeat("y", 100<<10)
	_, done, err := cl.SubmitWait(wctx, client.SubmitRequest{Type: "echo", Args: map[string]string{"x": big}})
	require.NoError(t, err)
	assert.Equal(t, "succeeded", done.State)
	assert.Equal(t, big, done.Out["x"])

	// The HMAC still applies: a TLS peer without the token is refused.
	_, err = client.Dial(wctx, addr, client.Options{Token: []byte("wrong-token-wrong-token-wrong-to"), TLS: peer, Logger: testLogger(),
		Reconnect: client.Reconnect{Off: true}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), wire.CodeAuthFailed)
}

// TestTLS_WrongCertificatesRefused: a server certificate from an unknown
// CA, an expired client certificate, a client certificate from another
// CA and none at all are each refused with an error that says why, and
// a plaintext peer gets no welcome.
func TestTLS_WrongCertificatesRefused(t *testing.T) {
	m := newMTLS(t)
	addr := startServer(t, maincontrol.Config{TLS: m.serverFiles})
	other := tlsfilestest.NewCA(t, "another CA")
	oc, ok := other.Issue(tlsfilestest.Leaf{Name: "stranger"})
	ec, ek := m.ca.Issue(tlsfilestest.Leaf{Name: "expired", Expired: true})

	dial := func(f tlsfiles.Files) error {
		ctx, cancel := context.WithTimeout(context.Background(), patience.Scale(10*time.Second))
		defer cancel()
		cl, err := client.Dial(ctx, addr, client.Options{TLS: clientTLS(t, f), Logger: testLogger(),
			Reconnect: client.Reconnect{Off: true}})
		if err == nil {
			cl.Close()
		}
		return err
	}
	cases := []struct {
		name  string
		files tlsfiles.Files
		want  string
	}{
		{"server from an unknown CA", tlsfiles.Files{Cert: m.peerCert, Key: m.peerKey, CA: other.CAFile}, "certificate signed by unknown authority"},
		{"expired client certificate", tlsfiles.Files{Cert: ec, Key: ek, CA: m.ca.CAFile}, "expired certificate"},
		{"client certificate from another CA", tlsfiles.Files{Cert: oc, Key: ok, CA: m.ca.CAFile}, "unknown certificate authority"},
		{"no client certificate", tlsfiles.Files{CA: m.ca.CAFile}, "certificate required"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := dial(tc.files)
			require.Error(t, err)
			t.Log(err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}

	// A plaintext peer: the server waits for a TLS hello and never says
	// welcome, then closes at the handshake timeout or at the garbage.
	c, err := net.DialTimeout("tcp", addr, patience.Scale(5*time.Second))
	require.NoError(t, err)
	defer c.Close()
	b := wire.Begin(nil, wire.KindHello)
	b.Str("req", "1")
	hello, err := b.Finish()
	require.NoError(t, err)
	_, _ = c.Write(hello)
	require.NoError(t, c.SetReadDeadline(time.Now().Add(patience.Scale(10*time.Second))))
	got, err := io.ReadAll(c)
	require.NoError(t, err, "closed, not timed out")
	assert.NotContains(t, string(got), "welcome")

	// A good peer still gets in after all that.
	require.NoError(t, dial(tlsfiles.Files{Cert: m.peerCert, Key: m.peerKey, CA: m.ca.CAFile}))
}

// TestTLS_ReloadTakesNewFiles: after a reload, new handshakes show the new
// certificate; a reload of a broken file keeps the one in force, says so
// in the log, and a later good reload still works.
func TestTLS_ReloadTakesNewFiles(t *testing.T) {
	oldCA, newCA := tlsfilestest.NewCA(t, "old CA"), tlsfilestest.NewCA(t, "new CA")
	dir := t.TempDir()
	files := tlsfiles.Files{Cert: dir + "/server.pem", Key: dir + "/server-key.pem"}
	install := func(ca *tlsfilestest.CA) {
		c, k := ca.Issue(tlsfilestest.Leaf{Name: "maincontrol"})
		tlsfilestest.Copy(t, c, files.Cert)
		tlsfilestest.Copy(t, k, files.Key)
	}
	install(oldCA)
	var logs syncbuf.Buffer
	reload := make(chan struct{})
	addr := startServer(t, maincontrol.Config{TLS: files, Reload: reload,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	dial := func(ca *tlsfilestest.CA) error {
		ctx, cancel := context.WithTimeout(context.Background(), patience.Scale(10*time.Second))
		defer cancel()
		cl, err := client.Dial(ctx, addr, client.Options{TLS: clientTLS(t, tlsfiles.Files{CA: ca.CAFile}),
			Logger: testLogger(), Reconnect: client.Reconnect{Off: true}})
		if err == nil {
			cl.Close()
		}
		return err
	}
	require.NoError(t, dial(oldCA))
	require.ErrorContains(t, dial(newCA), "unknown authority")

	install(newCA)
	reload <- struct{}{}
	waitLog(t, &logs, "TLS files reloaded", 1)
	require.NoError(t, dial(newCA), "the new certificate is served")
	require.ErrorContains(t, dial(oldCA), "unknown authority")

	require.NoError(t, os.WriteFile(files.Cert, []byte("not a certificate"), 0o600))
	reload <- struct{}{}
	waitLog(t, &logs, "TLS files not reloaded", 1)
	require.NoError(t, dial(newCA), "a broken file keeps the certificate in force")

	install(oldCA)
	reload <- struct{}{}
	waitLog(t, &logs, "TLS files reloaded", 2)
	require.NoError(t, dial(oldCA))
}

// waitLog waits until logs holds n lines with msg.
func waitLog(t *testing.T, logs *syncbuf.Buffer, msg string, n int) {
	t.Helper()
	require.Eventually(t, func() bool { return strings.Count(logs.String(), msg) >= n },
		patience.Scale(10*time.Second), 5*time.Millisecond, "log line %q", msg)
}

// TestTLS_SlowHandshakersCountAsUnauthenticated: connections that never
// finish their TLS handshake count against --max-unauth-conns. Past it a
// newcomer closes the oldest long before the handshake timeout, and an
// honest peer still gets in.
func TestTLS_SlowHandshakersCountAsUnauthenticated(t *testing.T) {
	m := newMTLS(t)
	addr := startServer(t, maincontrol.Config{TLS: m.serverFiles, MaxUnauthConns: 2,
		Core: core.Config{HandshakeTimeout: time.Hour}})
	closed := make(chan int, 3)
	for i := range 3 {
		c, err := net.DialTimeout("tcp", addr, patience.Scale(5*time.Second))
		require.NoError(t, err)
		t.Cleanup(func() { _ = c.Close() })
		go func() {
			_, _ = io.Copy(io.Discard, c) // silent: never says a TLS hello
			closed <- i
		}()
	}
	select {
	case <-closed:
	case <-time.After(patience.Scale(20 * time.Second)):
		t.Fatal("three silent handshakers held a cap of two")
	}
	ctx, cancel := context.WithTimeout(context.Background(), patience.Scale(10*time.Second))
	defer cancel()
	cl, err := client.Dial(ctx, addr, client.Options{Logger: testLogger(), Reconnect: client.Reconnect{Off: true},
		TLS: clientTLS(t, tlsfiles.Files{Cert: m.peerCert, Key: m.peerKey, CA: m.ca.CAFile})})
	require.NoError(t, err, "an honest peer makes room")
	cl.Close()
}
