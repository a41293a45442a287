package tlsfiles

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"
)

// RefusedCertHint is added to a client's error when the server refused its
// certificate. The bare alert reads as if the client distrusted the server.
const RefusedCertHint = "the main control refused this client's certificate: check --tls-cert"

// NoCertHint is added instead when the client had no certificate to give:
// there was none to check.
const NoCertHint = "the main control requires a client certificate: give --tls-cert and --tls-key"

// ExplainRefusal adds RefusedCertHint, or NoCertHint when conf gives no
// client certificate, to err when it carries a TLS alert about a
// certificate that the server sent. Such an alert is always the server's
// verdict on the client's certificate. With TLS 1.3 it comes after the
// handshake, on the first read, so callers check every early error. Other
// errors are returned as they are.
func ExplainRefusal(err error, conf *tls.Config) error {
	var op *net.OpError
	if err == nil || !errors.As(err, &op) || op.Op != "remote error" ||
		!strings.Contains(op.Err.Error(), "certificate") {
		return err
	}
	if conf != nil && len(conf.Certificates) == 0 && conf.GetClientCertificate == nil {
		return fmt.Errorf("%w (%s)", err, NoCertHint)
	}
	return fmt.Errorf("%w (%s)", err, RefusedCertHint)
}
