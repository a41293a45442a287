// Package tlsfiles is the one place TLS settings are loaded: a certificate
// and its key, and a CA bundle that verifies peers, all from PEM files.
// A Loader reads them at start and again at each Reload (SIGHUP). New
// handshakes use the newest files; a reload that fails keeps the old ones.
package tlsfiles

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"time"
)

// Files names the PEM files of one side of a TLS connection.
type Files struct {
	// Cert and Key are this side's certificate chain and private key.
	// Both or neither: a client may go without, a server may not.
	Cert, Key string
	// CA is the bundle that verifies the peer's certificate. A server
	// with one requires a client certificate signed by it. A client
	// without one verifies the server against the system's roots.
	CA string
}

// Empty reports whether no file is named: TLS is off.
func (f Files) Empty() bool { return f.Cert == "" && f.Key == "" && f.CA == "" }

// check refuses a certificate without its key, or a key without its
// certificate.
func (f Files) check() error {
	if (f.Cert == "") != (f.Key == "") {
		return fmt.Errorf("%w: a TLS certificate needs its key and a key its certificate (got cert %q, key %q)", ErrFiles, f.Cert, f.Key)
	}
	return nil
}

// ErrFiles wraps every error about the files' names or contents.
var ErrFiles = errors.New("bad TLS files")

// loaded is one consistent read of the files.
type loaded struct {
	cert *tls.Certificate // nil without Cert
	pool *x509.CertPool   // nil without CA
}

// Loader holds the files' newest good contents.
type Loader struct {
	files Files
	log   *slog.Logger

	mu  sync.RWMutex
	cur loaded
}

// Load reads the files once. Bad files at start are an error, never a
// silent fallback to plaintext.
func Load(f Files, log *slog.Logger) (*Loader, error) {
	if err := f.check(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.Default()
	}
	cur, err := read(f)
	if err != nil {
		return nil, err
	}
	return &Loader{files: f, log: log, cur: cur}, nil
}

func read(f Files) (loaded, error) {
	var l loaded
	if f.Cert != "" {
		c, err := tls.LoadX509KeyPair(f.Cert, f.Key)
		if err != nil {
			return l, fmt.Errorf("%w: certificate %s and key %s: %w", ErrFiles, f.Cert, f.Key, err)
		}
		l.cert = &c
	}
	if f.CA != "" {
		pem, err := os.ReadFile(f.CA)
		if err != nil {
			return l, fmt.Errorf("%w: CA bundle: %w", ErrFiles, err)
		}
		l.pool = x509.NewCertPool()
		if !l.pool.AppendCertsFromPEM(pem) {
			return l, fmt.Errorf("%w: CA bundle %s holds no PEM certificate", ErrFiles, f.CA)
		}
	}
	return l, nil
}

// Reload reads the files again. On failure the old contents stay in use,
// and the error is logged and returned.
func (l *Loader) Reload() error {
	cur, err := read(l.files)
	if err != nil {
		l.log.Error("TLS files not reloaded: the previous ones stay in use", "err", err)
		return err
	}
	l.mu.Lock()
	l.cur = cur
	l.mu.Unlock()
	l.log.Info("TLS files reloaded", "cert", l.files.Cert, "ca", l.files.CA, "not_after", notAfter(cur.cert))
	return nil
}

func (l *Loader) now() loaded {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.cur
}

// HasCA reports whether a CA bundle verifies peers.
func (l *Loader) HasCA() bool { return l.files.CA != "" }

// ServerConfig is a server's TLS configuration. Each handshake takes the
// newest certificate and CA bundle. With a CA bundle, a client must show
// a certificate it signed.
func (l *Loader) ServerConfig() (*tls.Config, error) {
	if l.files.Cert == "" {
		return nil, fmt.Errorf("%w: a TLS server needs a certificate and key", ErrFiles)
	}
	base := &tls.Config{MinVersion: tls.VersionTLS12}
	base.GetConfigForClient = func(*tls.ClientHelloInfo) (*tls.Config, error) {
		cur := l.now()
		c := &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{*cur.cert}}
		if cur.pool != nil {
			c.ClientCAs, c.ClientAuth = cur.pool, tls.RequireAndVerifyClientCert
		}
		return c, nil
	}
	return base, nil
}

// ClientConfig is a client's TLS configuration for a server named
// serverName (a host name or IP address the certificate must hold). Each
// handshake takes the newest client certificate and CA bundle. Dial with
// Client: with a CA bundle, the name checked is the one Client passes,
// and a handshake with no name to check fails.
func (l *Loader) ClientConfig(serverName string) *tls.Config {
	c := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: serverName}
	if l.files.CA != "" {
		// crypto/tls reads a client's roots once, from the config: the
		// newest bundle is checked here instead, with the same checks.
		c.InsecureSkipVerify = true
		c.VerifyConnection = l.verifyServer
	}
	if l.files.Cert != "" {
		c.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			return l.now().cert, nil
		}
	}
	return c
}

// verifyServer verifies the server's chain and name against the newest
// CA bundle, as crypto/tls would against RootCAs.
func (l *Loader) verifyServer(cs tls.ConnectionState) error {
	if len(cs.PeerCertificates) == 0 {
		return errors.New("tls: the server sent no certificate")
	}
	if cs.ServerName == "" {
		// x509 skips the name check for an empty name: refuse instead.
		return errors.New("tls: no server name to verify the certificate against")
	}
	opts := x509.VerifyOptions{Roots: l.now().pool, DNSName: cs.ServerName, Intermediates: x509.NewCertPool()}
	for _, c := range cs.PeerCertificates[1:] {
		opts.Intermediates.AddCert(c)
	}
	if _, err := cs.PeerCertificates[0].Verify(opts); err != nil {
		return &tls.CertificateVerificationError{UnverifiedCertificates: cs.PeerCertificates, Err: err}
	}
	return nil
}

func notAfter(c *tls.Certificate) time.Time {
	if c == nil || c.Leaf == nil {
		return time.Time{}
	}
	return c.Leaf.NotAfter
}

// Client runs the client's side of a TLS handshake on conn, dialled at
// addr, within ctx. Without cfg.ServerName it verifies addr's host. On
// failure it closes conn.
func Client(ctx context.Context, conn net.Conn, addr string, cfg *tls.Config) (*tls.Conn, error) {
	cfg = cfg.Clone()
	if cfg.ServerName == "" {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			host = addr
		}
		cfg.ServerName = host
	}
	if v := cfg.VerifyConnection; v != nil {
		// crypto/tls leaves an IP address out of the state's ServerName
		// (no SNI for it); a verifier must still check the name dialled.
		name := cfg.ServerName
		cfg.VerifyConnection = func(cs tls.ConnectionState) error {
			cs.ServerName = name
			return v(cs)
		}
	}
	tc := tls.Client(conn, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("TLS handshake with %s: %w", addr, err)
	}
	return tc, nil
}
