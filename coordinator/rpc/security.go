package rpc

import (
	"fmt"

	"github.com/nats-io/nats.go"

	"github.com/floe-io/floe/tlsconfig"
)

// Security is how a broker or coordinator authenticates to a secured NATS
// cluster: a credentials file (JWT and nkey seed, from nsc), or an nkey
// seed file, and TLS (a CA to verify the servers, a client certificate
// for servers that verify clients). The flags are --nats-creds,
// --nats-nkey, --nats-tls-ca, --nats-tls-cert and --nats-tls-key.
type Security struct {
	CredsFile string
	NKeyFile  string
	TLS       tlsconfig.ClientFiles
}

// Options returns the nats.Options s stands for; none when s is empty.
func (s Security) Options() ([]nats.Option, error) {
	var opts []nats.Option
	if s.CredsFile != "" && s.NKeyFile != "" {
		return nil, fmt.Errorf("nats: a credentials file and an nkey seed file are two ways to authenticate; pick one")
	}
	if s.CredsFile != "" {
		opts = append(opts, nats.UserCredentials(s.CredsFile))
	}
	if s.NKeyFile != "" {
		opt, err := nats.NkeyOptionFromSeed(s.NKeyFile)
		if err != nil {
			return nil, fmt.Errorf("nats: nkey seed %s: %w", s.NKeyFile, err)
		}
		opts = append(opts, opt)
	}
	if !s.TLS.IsZero() {
		cfg, err := tlsconfig.Client(s.TLS)
		if err != nil {
			return nil, fmt.Errorf("nats: %w", err)
		}
		opts = append(opts, nats.Secure(cfg))
	}
	return opts, nil
}
