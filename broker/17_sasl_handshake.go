package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/sasl"
)

// SaslHandshake: v0-v1. It picks the mechanism of the exchange that follows:
// in SaslAuthenticate requests for v1, unframed for v0 (sasl.go). An
// unknown mechanism is UNSUPPORTED_SASL_MECHANISM with the served ones; a
// handshake on a listener without SASL is ILLEGAL_SASL_STATE, as in Kafka.
func init() { register(kmsg.SASLHandshake, 0, 1, (*Broker).handleSASLHandshake) }

func (b *Broker) handleSASLHandshake(_ context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.SASLHandshakeRequest)
	resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
	resp.SupportedMechanisms = b.opts.SASLMechanisms
	if !b.saslEnabled() {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		return resp, nil
	}
	code := r.conn.startSASL(req.Mechanism)
	resp.ErrorCode = code
	if code != 0 {
		b.metrics.authFailed(req.Mechanism)
		b.log.Info("sasl handshake refused", "remote", r.conn.nc.RemoteAddr(), "mechanism", req.Mechanism, "error_code", code)
	}
	return resp, nil
}

// startSASL begins an exchange of mechanism, or returns why not as a
// Kafka error code.
func (c *conn) startSASL(mechanism string) int16 {
	if !c.b.supportsMechanism(mechanism) {
		return kerr.UnsupportedSaslMechanism.Code
	}
	c.auth.mu.Lock()
	defer c.auth.mu.Unlock()
	if c.auth.firstMechanism != "" && c.auth.firstMechanism != mechanism {
		// Re-authentication must keep the mechanism (KIP-368).
		return kerr.IllegalSaslState.Code
	}
	s, err := sasl.NewSession(mechanism, c.b.coord)
	if err != nil {
		return kerr.UnsupportedSaslMechanism.Code
	}
	c.auth.mechanism, c.auth.session = mechanism, s
	return 0
}
