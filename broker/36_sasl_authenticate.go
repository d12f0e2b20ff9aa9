package broker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/sasl"
)

// SaslAuthenticate: v0-v2. v1 adds the session lifetime (KIP-368), v2 is
// flexible. Each request is one step of the exchange SaslHandshake began;
// the last sets the connection's principal. A failure is
// SASL_AUTHENTICATION_FAILED, after which the connection closes; a request
// without a handshake before it is ILLEGAL_SASL_STATE.
func init() { register(kmsg.SASLAuthenticate, 0, 2, (*Broker).handleSASLAuthenticate) }

func (b *Broker) handleSASLAuthenticate(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.SASLAuthenticateRequest)
	resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	out, lifetime, _, err := r.conn.stepSASL(ctx, req.SASLAuthBytes)
	if err != nil {
		var ke *kerr.Error
		if !errors.As(err, &ke) {
			// The credentials could not be read: close without blaming the
			// client, which connects again.
			return nil, fmt.Errorf("sasl authenticate: %w", err)
		}
		resp.ErrorCode = ke.Code
		msg := err.Error()
		resp.ErrorMessage = &msg
		r.closeAfter = true
		return resp, nil
	}
	resp.SASLAuthBytes = out
	resp.SessionLifetimeMillis = lifetime.Milliseconds()
	return resp, nil
}

// stepSASL feeds msg to the connection's exchange. It returns the answer,
// whether the exchange is over and, when it ended with success, the session
// lifetime (0: no limit). Kafka-level failures wrap a *kerr.Error; other errors mean the
// credentials could not be read.
func (c *conn) stepSASL(ctx context.Context, msg []byte) (out []byte, lifetime time.Duration, done bool, err error) {
	c.auth.mu.Lock()
	defer c.auth.mu.Unlock()
	s := c.auth.session
	if s == nil {
		return nil, 0, true, fmt.Errorf("%w: SaslAuthenticate before SaslHandshake", kerr.IllegalSaslState)
	}
	out, done, err = s.Step(ctx, msg)
	mech := c.auth.mechanism
	if err != nil {
		c.auth.session = nil
		if errors.Is(err, sasl.ErrAuthFailed) {
			c.b.metrics.authFailed(mech)
			c.b.log.Info("sasl authentication failed", "remote", c.nc.RemoteAddr(), "mechanism", mech,
				"principal", "User:"+s.Claimed(), "err", err)
			return nil, 0, true, fmt.Errorf("%w: Authentication failed: %v", kerr.SaslAuthenticationFailed, err)
		}
		return nil, 0, true, err
	}
	if !done {
		return out, 0, false, nil
	}
	c.auth.session = nil
	principal := "User:" + s.Username()
	if c.auth.authenticated.Load() && principal != c.principal() {
		c.b.metrics.authFailed(mech)
		c.b.log.Info("sasl re-authentication changed the principal", "remote", c.nc.RemoteAddr(), "mechanism", mech,
			"principal", c.principal(), "new_principal", principal)
		return nil, 0, true, fmt.Errorf("%w: Cannot change principals during re-authentication from %s to %s", kerr.SaslAuthenticationFailed, c.principal(), principal)
	}
	c.setPrincipal(principal)
	c.auth.firstMechanism = mech
	if d := c.b.opts.ReauthInterval; d > 0 {
		lifetime = d
		c.auth.expiresAt.Store(time.Now().Add(d).UnixNano())
	}
	c.auth.authenticated.Store(true)
	c.b.metrics.authSucceeded(mech)
	c.b.log.Debug("sasl authenticated", "remote", c.nc.RemoteAddr(), "mechanism", mech, "principal", principal)
	return out, lifetime, true, nil
}
