package executor_test

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/executor"
	"github.com/apollo11/apollo11/internal/tlsfiles"
	"github.com/apollo11/apollo11/internal/tlsfiles/tlsfilestest"
	"github.com/apollo11/apollo11/wire"
)

// A plaintext executor on a TLS port logs that TLS may be needed; one
// whose certificate the port refuses logs that it was refused.
func TestTLSHints_PlaintextAndRefusedCertificate(t *testing.T) {
	ca := tlsfilestest.NewCA(t, "ca")
	sc, sk := ca.Issue(tlsfilestest.Leaf{Name: "server"})
	pair, err := tls.LoadX509KeyPair(sc, sk)
	require.NoError(t, err)
	pem, err := os.ReadFile(ca.CAFile)
	require.NoError(t, err)
	roots := x509.NewCertPool()
	require.True(t, roots.AppendCertsFromPEM(pem))
	addr := tlsfilestest.HandshakeOnlyPort(t, &tls.Config{Certificates: []tls.Certificate{pair},
		ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: roots}, 200*time.Millisecond)

	for _, tc := range []struct {
		name string
		tls  *tls.Config
		hint string
	}{
		{"plaintext", nil, wire.NoWelcomeHint},
		{"no certificate", &tls.Config{RootCAs: roots}, tlsfiles.NoCertHint},
	} {
		s := mustRun(t, nil, executor.Config{Addr: addr, TLS: tc.tls, DialTimeout: time.Minute,
			Handlers:   map[string]executor.Handler{"echo": echoHandler()},
			BackoffMin: time.Hour, BackoffMax: time.Hour})
		r := s.logs.eventually(t, "cannot register with the main control")
		assert.Contains(t, r["err"], tc.hint, tc.name)
		assert.Equal(t, tc.tls != nil, s.logs.eventually(t, "executor starting")["tls"], "the startup line says whether TLS is on")
	}
}
