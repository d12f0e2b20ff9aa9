package broker

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestSessionExpiry: a SASL listener admits only ApiVersions and the SASL
// requests before authentication; afterwards everything, until the
// session's end (connections.max.reauth.ms), when only the SASL requests
// (re-authentication) are admitted again.
func TestSessionExpiry(t *testing.T) {
	b := newTestBroker(t, Deps{Coordinator: newTestCoordinator(t)}, func(o *Options) { o.SASLMechanisms = []string{"PLAIN"} })
	c := &conn{b: b}
	now := time.Now()
	for _, tc := range []struct {
		key  kmsg.Key
		want bool
	}{{kmsg.ApiVersions, true}, {kmsg.SASLHandshake, true}, {kmsg.SASLAuthenticate, true}, {kmsg.Metadata, false}, {kmsg.Produce, false}} {
		if got := c.admitted(int16(tc.key), now); got != tc.want {
			t.Errorf("before authentication, %s admitted %v", kmsg.NameForKey(int16(tc.key)), got)
		}
	}
	c.auth.authenticated.Store(true)
	c.auth.expiresAt.Store(now.Add(time.Second).UnixNano())
	if !c.admitted(int16(kmsg.Metadata), now) {
		t.Error("Metadata refused within the session")
	}
	later := now.Add(2 * time.Second)
	if c.admitted(int16(kmsg.Metadata), later) || c.admitted(int16(kmsg.Fetch), later) {
		t.Error("a request admitted after the session's end")
	}
	if !c.admitted(int16(kmsg.SASLHandshake), later) || !c.admitted(int16(kmsg.SASLAuthenticate), later) {
		t.Error("re-authentication refused after the session's end")
	}
	b.opts.SASLMechanisms = nil
	if !(&conn{b: b}).admitted(int16(kmsg.Metadata), later) {
		t.Error("a listener without SASL refused a request")
	}
}
