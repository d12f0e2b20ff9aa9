package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/floe-io/floe/sasl"
	"github.com/floe-io/floe/tlsconfig"
)

// tlsConfig returns the client TLS configuration of the settings, nil
// without TLS.
func (g *globals) tlsConfig() (*tls.Config, error) {
	if !g.tls {
		return nil, nil
	}
	cfg, err := tlsconfig.Client(tlsconfig.ClientFiles{CAFile: g.tlsCA, CertFile: g.tlsCert, KeyFile: g.tlsKey})
	if err != nil {
		return nil, err
	}
	cfg.InsecureSkipVerify = g.tlsInsecure
	return cfg, nil
}

// kgoOpts returns the client options of the settings: seeds, TLS, SASL.
func (g *globals) kgoOpts() ([]kgo.Opt, error) {
	opts := []kgo.Opt{
		kgo.SeedBrokers(g.brokers...),
		kgo.ClientID("floe-cli"),
		kgo.DialTimeout(10 * time.Second),
	}
	cfg, err := g.tlsConfig()
	if err != nil {
		return nil, err
	}
	if cfg != nil {
		opts = append(opts, kgo.DialTLSConfig(cfg))
	}
	if m, ok := sasl.Client(g.saslMechanism, g.saslUser, g.saslPassword); ok {
		opts = append(opts, kgo.SASL(m))
	}
	return opts, nil
}

// client returns a Kafka client with the settings and extra options; the
// caller closes it.
func (c *cli) client(extra ...kgo.Opt) (*kgo.Client, error) {
	opts, err := c.g.kgoOpts()
	if err != nil {
		return nil, err
	}
	return kgo.NewClient(append(opts, extra...)...)
}

// admin returns an admin client over a new Kafka client; close it with
// Close.
func (c *cli) admin() (*kadm.Client, error) {
	cl, err := c.client()
	if err != nil {
		return nil, err
	}
	adm := kadm.NewClient(cl)
	adm.SetTimeoutMillis(int32(c.g.timeout / time.Millisecond))
	return adm, nil
}

// reqCtx bounds one admin operation by --timeout.
func (c *cli) reqCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(c.ctx, c.g.timeout)
}

// withAdmin runs fn with an admin client and a request context bounded by
// --timeout, and closes both after it. fn explains a failed request with
// reachErr.
func (c *cli) withAdmin(fn func(ctx context.Context, adm *kadm.Client) error) error {
	adm, err := c.admin()
	if err != nil {
		return err
	}
	defer adm.Close()
	ctx, cancel := c.reqCtx()
	defer cancel()
	return fn(ctx, adm)
}

// request runs one admin request, as withAdmin, and returns its answer; a
// request that failed without a Kafka error is explained by reachErr.
func request[T any](c *cli, req func(ctx context.Context, adm *kadm.Client) (T, error)) (T, error) {
	var answer T
	err := c.withAdmin(func(ctx context.Context, adm *kadm.Client) error {
		var err error
		if answer, err = req(ctx, adm); err != nil {
			return c.reachErr(err)
		}
		return nil
	})
	return answer, err
}

// kafkaErr returns err with the broker's message, if any, after its name:
// "TOPIC_ALREADY_EXISTS: The topic has already been created. (topic x
// exists)".
func kafkaErr(err error, msg string) error {
	if err == nil {
		return nil
	}
	if msg != "" && msg != err.Error() {
		return fmt.Errorf("%w (%s)", err, msg)
	}
	return err
}

// reachErr explains a request that failed without a Kafka error, which is
// most often a broker that cannot be reached.
func (c *cli) reachErr(err error) error {
	var ke *kerr.Error
	var ne net.Error
	switch {
	case errors.As(err, &ke):
		return err
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne):
		return fmt.Errorf("%w (brokers %v: is a broker running there, and are --tls/--sasl-* right?)", err, c.g.brokers)
	}
	return err
}
