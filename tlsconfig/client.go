package tlsconfig

import (
	"crypto/tls"
	"fmt"
)

// ClientFiles configure TLS on one of floe's own links (to S3 or NATS).
type ClientFiles struct {
	// CAFile is a PEM bundle to verify the server with. Default: the
	// system's roots.
	CAFile string
	// CertFile and KeyFile are a client certificate, for servers that
	// require one. Default: none.
	CertFile, KeyFile string
}

// IsZero reports whether nothing is configured: the link uses Go's
// defaults.
func (f ClientFiles) IsZero() bool { return f == ClientFiles{} }

// Client returns the client configuration f describes.
func Client(f ClientFiles) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if f.CAFile != "" {
		pool, err := loadPool(f.CAFile)
		if err != nil {
			return nil, err
		}
		cfg.RootCAs = pool
	}
	if (f.CertFile == "") != (f.KeyFile == "") {
		return nil, fmt.Errorf("tls: a client certificate needs both its file and its key")
	}
	if f.CertFile != "" {
		pair, err := tls.LoadX509KeyPair(f.CertFile, f.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("tls: client key pair: %w", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}
