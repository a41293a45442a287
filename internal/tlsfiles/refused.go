package tlsfiles

import (
	"errors"
	"fmt"
	"net"
	"strings"
)

// RefusedCertHint is added to a client's error when the server refused its
// certificate. The bare alert reads as if the client distrusted the server.
const RefusedCertHint = "the main control refused this client's certificate: check --tls-cert"

// ExplainRefusal adds RefusedCertHint to err when it carries a TLS alert
// about a certificate that the server sent. Such an alert is always the
// server's verdict on the client's certificate. With TLS 1.3 it comes
// after the handshake, on the first read, so callers check every early
// error. Other errors are returned as they are.
func ExplainRefusal(err error) error {
	var op *net.OpError
	if err == nil || !errors.As(err, &op) || op.Op != "remote error" ||
		!strings.Contains(op.Err.Error(), "certificate") {
		return err
	}
	return fmt.Errorf("%w (%s)", err, RefusedCertHint)
}
