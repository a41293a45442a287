package client_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/client"
	"github.com/apollo11/apollo11/internal/tlsfiles"
	"github.com/apollo11/apollo11/internal/tlsfiles/tlsfilestest"
	"github.com/apollo11/apollo11/wire"
)

type tlsSetup struct {
	server       *tls.Config // asks for a client certificate of ca
	ca, other    *tlsfilestest.CA
	peer, strngr tls.Certificate // signed by ca, by other
}

func newTLSSetup(t *testing.T) tlsSetup {
	t.Helper()
	s := tlsSetup{ca: tlsfilestest.NewCA(t, "ca"), other: tlsfilestest.NewCA(t, "other")}
	s.peer = loadPair(t, s.ca, "peer")
	s.strngr = loadPair(t, s.other, "stranger")
	s.server = &tls.Config{Certificates: []tls.Certificate{loadPair(t, s.ca, "server")},
		ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool(t, s.ca)}
	return s
}

func loadPair(t *testing.T, ca *tlsfilestest.CA, name string) tls.Certificate {
	t.Helper()
	c, k := ca.Issue(tlsfilestest.Leaf{Name: name})
	pair, err := tls.LoadX509KeyPair(c, k)
	require.NoError(t, err)
	return pair
}

func pool(t *testing.T, ca *tlsfilestest.CA) *x509.CertPool {
	t.Helper()
	pem, err := os.ReadFile(ca.CAFile)
	require.NoError(t, err)
	p := x509.NewCertPool()
	require.True(t, p.AppendCertsFromPEM(pem))
	return p
}

func dialOnce(addr string, opts client.Options) error {
	opts.Reconnect = client.Reconnect{Off: true}
	c, err := client.Dial(context.Background(), addr, opts)
	if err == nil {
		c.Close()
	}
	return err
}

// A plaintext client on a TLS port gets no welcome: the port waits for a
// TLS hello, then closes. The error says TLS may be needed, whether the
// port closed first or the client's dial timeout ran out first.
func TestDial_PlaintextOnTLSPortHintsTLS(t *testing.T) {
	s := newTLSSetup(t)
	err := dialOnce(tlsfilestest.HandshakeOnlyPort(t, s.server, 200*time.Millisecond), client.Options{DialTimeout: time.Minute})
	require.Error(t, err)
	assert.Contains(t, err.Error(), wire.NoWelcomeHint)

	err = dialOnce(tlsfilestest.HandshakeOnlyPort(t, s.server, time.Minute), client.Options{DialTimeout: 200 * time.Millisecond})
	require.Error(t, err)
	assert.Contains(t, err.Error(), wire.NoWelcomeHint)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
}

// A main control that refuses the client's certificate sends an alert
// that reads as if the client distrusted it. The error says which side
// refused which certificate. A client that distrusts the server gets no
// such hint.
func TestDial_RefusedClientCertificateSaysSo(t *testing.T) {
	s := newTLSSetup(t)
	addr := tlsfilestest.HandshakeOnlyPort(t, s.server, waitFor)
	stranger := func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &s.strngr, nil }
	for name, tc := range map[string]struct {
		cfg  *tls.Config
		hint string
	}{
		// None given: it is not that one was wrong.
		"none":     {&tls.Config{RootCAs: pool(t, s.ca)}, tlsfiles.NoCertHint},
		"other CA": {&tls.Config{RootCAs: pool(t, s.ca), GetClientCertificate: stranger}, tlsfiles.RefusedCertHint},
	} {
		err := dialOnce(addr, client.Options{TLS: tc.cfg})
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), tc.hint, name)
		t.Log(err)
	}
	err := dialOnce(addr, client.Options{TLS: &tls.Config{RootCAs: pool(t, s.other), Certificates: []tls.Certificate{s.peer}}})
	require.Error(t, err)
	assert.NotContains(t, err.Error(), tlsfiles.RefusedCertHint, "the client refused the server")
	assert.NotContains(t, err.Error(), wire.NoWelcomeHint)
}
