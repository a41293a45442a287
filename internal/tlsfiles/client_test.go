package tlsfiles_test

import (
	"context"
	"crypto/tls"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/internal/tlsfiles"
	"github.com/apollo11/apollo11/internal/tlsfiles/tlsfilestest"
)

// serve runs a TLS server with the certificate of ca's leaf on loopback.
func serve(t *testing.T, ca *tlsfilestest.CA, name string) string {
	t.Helper()
	c, k := ca.Issue(tlsfilestest.Leaf{Name: name})
	l, err := tlsfiles.Load(tlsfiles.Files{Cert: c, Key: k}, nil)
	require.NoError(t, err)
	cfg, err := l.ServerConfig()
	require.NoError(t, err)
	return tlsfilestest.HandshakeOnlyPort(t, cfg, 10*time.Second)
}

// handshake dials addr and runs the client's handshake as if addr were
// named dialled.
func handshake(t *testing.T, addr, dialled string, cfg *tls.Config) error {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tc, err := tlsfiles.Client(ctx, conn, dialled, cfg)
	if err == nil {
		tc.Close()
	}
	return err
}

// TestClientConfig_VerifiesWithTheNewestCA: a client checks the server's
// chain and name against the CA bundle as it is at each handshake, so a
// reload (SIGHUP) takes a new bundle without a restart.
func TestClientConfig_VerifiesWithTheNewestCA(t *testing.T) {
	ca1, ca2 := tlsfilestest.NewCA(t, "ca1"), tlsfilestest.NewCA(t, "ca2")
	bundle := t.TempDir() + "/ca.pem"
	tlsfilestest.Copy(t, ca1.CAFile, bundle)
	l, err := tlsfiles.Load(tlsfiles.Files{CA: bundle}, nil)
	require.NoError(t, err)
	cfg := l.ClientConfig("")
	old, rotated := serve(t, ca1, "old"), serve(t, ca2, "new")

	require.NoError(t, handshake(t, old, old, cfg))
	var verr *tls.CertificateVerificationError
	err = handshake(t, rotated, rotated, cfg)
	require.ErrorAs(t, err, &verr, "another CA's server is refused")
	assert.Contains(t, err.Error(), "unknown authority")
	err = handshake(t, old, "127.0.0.2:1", cfg)
	require.ErrorAs(t, err, &verr, "the name dialled must be in the certificate")
	assert.Contains(t, err.Error(), "127.0.0.2")

	tlsfilestest.Copy(t, ca2.CAFile, bundle)
	require.NoError(t, l.Reload())
	require.NoError(t, handshake(t, rotated, rotated, cfg), "the same config takes the new bundle")
	assert.ErrorAs(t, handshake(t, old, old, cfg), &verr)

	// Dialled without Client, an IP address reaches the verifier with no
	// name (no SNI for it): refused, never checked against another name.
	named := l.ClientConfig("localhost")
	named.ServerName = "127.0.0.1"
	conn, err := net.Dial("tcp", rotated)
	require.NoError(t, err)
	defer conn.Close()
	err = tls.Client(conn, named).Handshake()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no server name")
}
