package main

import (
	"crypto/tls"
	"flag"
	"log/slog"

	"github.com/apollo11/apollo11/internal/tlsfiles"
)

// tlsPeerFlags are the TLS settings of a peer of the main control: the
// client commands and the executor daemon.
type tlsPeerFlags struct{ ca, cert, key string }

func (t *tlsPeerFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&t.ca, "tls-ca", "", "CA bundle (PEM) that verifies the main control's TLS certificate; any --tls-* flag turns TLS on (without --tls-ca: the system's roots)")
	fs.StringVar(&t.cert, "tls-cert", "", "client certificate (PEM) for a main control with --tls-client-ca; needs --tls-key")
	fs.StringVar(&t.key, "tls-key", "", "private key (PEM) of --tls-cert")
}

// config is the TLS configuration the flags name, or nil for plaintext.
// The main control's host in the dialled address must be in its
// certificate.
func (t *tlsPeerFlags) config(log *slog.Logger) (*tls.Config, error) {
	l, err := t.load(log)
	if l == nil || err != nil {
		return nil, err
	}
	return l.ClientConfig(""), nil
}

// load reads the files the flags name, or returns nil for plaintext. A
// daemon keeps the Loader to read them again on SIGHUP.
func (t *tlsPeerFlags) load(log *slog.Logger) (*tlsfiles.Loader, error) {
	files := tlsfiles.Files{Cert: t.cert, Key: t.key, CA: t.ca}
	if files.Empty() {
		return nil, nil
	}
	return tlsfiles.Load(files, log)
}
