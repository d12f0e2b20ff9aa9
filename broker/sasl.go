package broker

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/sasl"
)

// SASL on the Kafka listener (Options.SASLMechanisms). A connection starts
// unauthenticated and may then send only ApiVersions, SaslHandshake and
// SaslAuthenticate: anything else closes it at once, unanswered, as Apache
// Kafka does. SaslHandshake picks a mechanism; SaslAuthenticate (v0-v2)
// carries the exchange, and its last step sets the connection's principal
// ("User:<name>"). A failed exchange is answered with
// SASL_AUTHENTICATION_FAILED and the connection closes after the answer.
//
// SaslHandshake v0 is followed by the exchange's messages without Kafka
// framing (a 4-byte length and the bytes, each way), as the earliest
// clients spoke it: the read loop serves those itself (readRawSASL).
//
// Re-authentication (KIP-368): with Options.ReauthInterval set
// (connections.max.reauth.ms), SaslAuthenticate v1+ tells the client its
// session's lifetime; a request other than the SASL ones that arrives after
// it closes the connection. The client re-authenticates on the same
// connection with the same mechanism and principal.

// connAuth is a connection's SASL state.
type connAuth struct {
	// authenticated is set once an exchange succeeded; expiresAt (Unix
	// ns, 0 for never) is when the session ends.
	authenticated atomic.Bool
	expiresAt     atomic.Int64

	mu        sync.Mutex
	mechanism string       // chosen by the last handshake
	session   sasl.Session // the exchange in progress, nil when none
	// firstMechanism is the mechanism of the first successful exchange:
	// re-authentication must use it.
	firstMechanism string
}

// saslEnabled reports whether the listener requires SASL.
func (b *Broker) saslEnabled() bool { return len(b.opts.SASLMechanisms) > 0 }

// saslAPI reports whether key may be sent before authentication.
func saslAPI(key int16) bool {
	switch kmsg.Key(key) {
	case kmsg.ApiVersions, kmsg.SASLHandshake, kmsg.SASLAuthenticate:
		return true
	}
	return false
}

// admitted reports whether the connection may send a request of key: any
// request once authenticated and within its session, only the SASL ones
// before.
func (c *conn) admitted(key int16, now time.Time) bool {
	if !c.b.saslEnabled() || saslAPI(key) {
		return true
	}
	if !c.auth.authenticated.Load() {
		return false
	}
	exp := c.auth.expiresAt.Load()
	return exp == 0 || now.UnixNano() < exp
}

// supportsMechanism reports whether the listener serves mechanism.
func (b *Broker) supportsMechanism(mechanism string) bool {
	return slices.Contains(b.opts.SASLMechanisms, mechanism)
}
