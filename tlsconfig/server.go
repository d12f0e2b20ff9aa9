package tlsconfig

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"
)

// ServerFiles name a server's key pair and, for mutual TLS, the CA
// bundle client certificates must chain to.
type ServerFiles struct {
	// CertFile and KeyFile are PEM files (the certificate file may hold
	// the chain). Required.
	CertFile, KeyFile string
	// ClientCAFile turns on client certificates: a client must present one
	// that chains to a CA in this PEM bundle. Default: none.
	ClientCAFile string
	// ClientAuthOptional accepts clients without a certificate even with
	// ClientCAFile (Kafka's ssl.client.auth=requested); a certificate that
	// is presented must still verify. Default: false (required).
	ClientAuthOptional bool
}

// reloadCheck bounds how often a handshake looks at the files' times.
const reloadCheck = time.Second

// Server is a TLS server configuration that follows its files: a
// handshake at least a second after the last check looks at their
// modification times and sizes and re-reads them when they changed. A
// bad new file is logged and the last good one kept.
type Server struct {
	files ServerFiles
	log   *slog.Logger

	mu        sync.Mutex
	checked   time.Time
	every     time.Duration // reloadCheck; tests set 0 to check on every handshake
	stamp     string
	cfg       *tls.Config
	reloads   int
	lastError error
}

// NewServer loads files once (an error if they do not load) and returns
// the server configuration.
func NewServer(files ServerFiles, log *slog.Logger) (*Server, error) {
	if files.CertFile == "" || files.KeyFile == "" {
		return nil, errors.New("tls: a certificate and its key are both required")
	}
	if log == nil {
		log = slog.Default()
	}
	s := &Server{files: files, log: log, every: reloadCheck}
	cfg, stamp, err := s.load()
	if err != nil {
		return nil, err
	}
	s.cfg, s.stamp, s.checked = cfg, stamp, time.Now()
	return s, nil
}

// Config returns the configuration to give tls.NewListener or an
// http.Server: each handshake gets the files' current contents.
func (s *Server) Config() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			return s.current(), nil
		},
	}
}

// OptionalClientCertConfig is Config, but a client certificate is only
// verified when one is presented, never required: for a listener that
// serves open paths (/healthz, /metrics) beside ones that authenticate
// by other means too (HTTP Basic).
func (s *Server) OptionalClientCertConfig() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			cfg := s.current()
			if cfg.ClientAuth == tls.RequireAndVerifyClientCert {
				cfg = cfg.Clone()
				cfg.ClientAuth = tls.VerifyClientCertIfGiven
			}
			return cfg, nil
		},
	}
}

// Reloads returns how many times the files were re-read after a change.
func (s *Server) Reloads() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reloads
}

// current returns the configuration, re-reading the files when they
// changed since the last check.
func (s *Server) current() *tls.Config {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	if now.Sub(s.checked) < s.every {
		return s.cfg
	}
	s.checked = now
	stamp, err := s.fileStamp()
	if err != nil || stamp == s.stamp {
		return s.cfg
	}
	cfg, stamp, err := s.load()
	if err != nil {
		if s.lastError == nil || s.lastError.Error() != err.Error() {
			s.log.Warn("tls files changed but do not load; keeping the last good ones", "cert", s.files.CertFile, "err", err)
		}
		s.lastError = err
		return s.cfg
	}
	s.cfg, s.stamp, s.lastError = cfg, stamp, nil
	s.reloads++
	s.log.Info("tls certificate reloaded", "cert", s.files.CertFile)
	return s.cfg
}

// fileStamp identifies the files' versions by size and modification time.
func (s *Server) fileStamp() (string, error) {
	stamp := ""
	for _, f := range []string{s.files.CertFile, s.files.KeyFile, s.files.ClientCAFile} {
		if f == "" {
			continue
		}
		fi, err := os.Stat(f)
		if err != nil {
			return "", err
		}
		stamp += fmt.Sprintf("%s:%d:%d;", f, fi.Size(), fi.ModTime().UnixNano())
	}
	return stamp, nil
}

func (s *Server) load() (*tls.Config, string, error) {
	stamp, err := s.fileStamp()
	if err != nil {
		return nil, "", fmt.Errorf("tls: %w", err)
	}
	pair, err := tls.LoadX509KeyPair(s.files.CertFile, s.files.KeyFile)
	if err != nil {
		return nil, "", fmt.Errorf("tls: key pair %s, %s: %w", s.files.CertFile, s.files.KeyFile, err)
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{pair}}
	if s.files.ClientCAFile != "" {
		pool, err := loadPool(s.files.ClientCAFile)
		if err != nil {
			return nil, "", err
		}
		cfg.ClientCAs = pool
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
		if s.files.ClientAuthOptional {
			cfg.ClientAuth = tls.VerifyClientCertIfGiven
		}
	}
	return cfg, stamp, nil
}

func loadPool(file string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("tls: CA bundle: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("tls: CA bundle %s holds no PEM certificate", file)
	}
	return pool, nil
}
