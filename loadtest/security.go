package loadtest

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/floe-io/floe/sasl"
)

// Security is how the load tester's clients connect to a secured broker:
// TLS (with a CA bundle for a private CA) and SASL.
type Security struct {
	// TLS connects over TLS (--tls). Default: false.
	TLS bool
	// TLSCAFile verifies the brokers with this PEM bundle (--tls-ca).
	// Default: the system's roots.
	TLSCAFile string
	// SASLMechanism is PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512
	// (--sasl-mechanism), with SASLUser and SASLPassword (--sasl-user,
	// --sasl-password). Default: none.
	SASLMechanism string
	SASLUser      string
	SASLPassword  string
}

// validate reports what is wrong with s.
func (s Security) validate() []string {
	var p []string
	switch strings.ToUpper(s.SASLMechanism) {
	case "", "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512":
	default:
		p = append(p, fmt.Sprintf("--sasl-mechanism: %q is not PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", s.SASLMechanism))
	}
	if s.SASLMechanism != "" && s.SASLUser == "" {
		p = append(p, "--sasl-mechanism needs --sasl-user")
	}
	if s.TLSCAFile != "" && !s.TLS {
		p = append(p, "--tls-ca needs --tls")
	}
	return p
}

// seedOpts are every client's options: the seed brokers and the security.
func seedOpts(cfg *Config) []kgo.Opt {
	opts := []kgo.Opt{kgo.SeedBrokers(cfg.Brokers...)}
	s := cfg.Security
	if s.TLS {
		tc := &tls.Config{MinVersion: tls.VersionTLS12}
		if s.TLSCAFile != "" {
			// Validate checked the flags; a CA file that does not load
			// fails every connection with a TLS error, which is reported.
			if pem, err := os.ReadFile(s.TLSCAFile); err == nil {
				tc.RootCAs = x509.NewCertPool()
				tc.RootCAs.AppendCertsFromPEM(pem)
			}
		}
		opts = append(opts, kgo.DialTLSConfig(tc))
	}
	if m, ok := sasl.Client(s.SASLMechanism, s.SASLUser, s.SASLPassword); ok {
		opts = append(opts, kgo.SASL(m))
	}
	return opts
}
