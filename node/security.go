package node

import (
	"bufio"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"golang.org/x/time/rate"

	"github.com/floe-io/floe/broker"
	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/kvindex"
	"github.com/floe-io/floe/sasl"
	"github.com/floe-io/floe/tlsconfig"
)

// TLSConfig puts TLS on the node's Kafka and HTTP listeners.
type TLSConfig struct {
	// Files are the key pair and, for mutual TLS, the client CA bundle
	// (--tls-cert, --tls-key, --tls-client-ca; --tls-client-auth=requested
	// sets ClientAuthOptional). They are re-read when they change.
	Files tlsconfig.ServerFiles
	// PrincipalMappingRules maps a client certificate's subject to its
	// principal, as Kafka's ssl.principal.mapping.rules
	// (--tls-principal-mapping-rules). Default: DEFAULT, the subject.
	PrincipalMappingRules string
	// InternalCAFile verifies the zone peers' HTTPS listeners when this
	// broker reads their chunks (--internal-tls-ca). Default: the system's
	// roots and the client CA bundle.
	InternalCAFile string
}

// enabled reports whether TLS is configured.
func (c TLSConfig) enabled() bool { return c.Files.CertFile != "" || c.Files.KeyFile != "" }

// securityOn reports whether clients must say who they are: SASL on the
// Kafka listener or client certificates. /kv then requires credentials.
func (n *Node) securityOn() bool {
	return len(n.cfg.Broker.SASLMechanisms) > 0 || n.cfg.TLS.Files.ClientCAFile != ""
}

// validateSASL checks the SASL mechanisms named.
func validateSASL(mechs []string) error {
	for _, m := range mechs {
		switch m {
		case sasl.Plain, sasl.ScramSHA256, sasl.ScramSHA512:
		default:
			return fmt.Errorf("--sasl-mechanisms: %q is not one of %s, %s, %s", m, sasl.Plain, sasl.ScramSHA256, sasl.ScramSHA512)
		}
	}
	return nil
}

// setupTLS loads the listeners' TLS configuration, when there is one.
func (n *Node) setupTLS() error {
	if !n.cfg.TLS.enabled() {
		if n.cfg.TLS.Files.ClientCAFile != "" {
			return errors.New("--tls-client-ca needs --tls-cert and --tls-key")
		}
		return nil
	}
	srv, err := tlsconfig.NewServer(n.cfg.TLS.Files, n.log)
	if err != nil {
		return err
	}
	rules, err := tlsconfig.ParseRules(n.cfg.TLS.PrincipalMappingRules)
	if err != nil {
		return err
	}
	n.tls.server, n.tls.rules = srv, rules
	return nil
}

// secureListener wraps ln in TLS when it is configured. A listener with
// optionalCert (HTTP: /healthz and /metrics stay open, /kv also takes HTTP
// Basic) verifies client certificates only when presented.
func (n *Node) secureListener(ln net.Listener, optionalCert bool) net.Listener {
	switch {
	case n.tls.server == nil:
		return ln
	case optionalCert:
		return tls.NewListener(ln, n.tls.server.OptionalClientCertConfig())
	}
	// The Kafka listener: records written in 64 KiB system calls (the
	// broker flushes after each response).
	return tlsconfig.NewListener(ln, n.tls.server.Config())
}

// zoneTLS is the client configuration for reading zone peers' chunks over
// their HTTPS listeners; nil without TLS.
func (n *Node) zoneTLS() (*tls.Config, error) {
	if n.tls.server == nil {
		return nil, nil
	}
	f := tlsconfig.ClientFiles{CAFile: n.cfg.TLS.InternalCAFile}
	if f.CAFile == "" {
		f.CAFile = n.cfg.TLS.Files.ClientCAFile
	}
	return tlsconfig.Client(f)
}

// loadUsersFile reads name:password lines (blank lines and # comments
// skipped) and makes sure the coordinator holds each user's SCRAM
// credential for every enabled SCRAM mechanism (SCRAM-SHA-512 when only
// PLAIN is on, which checks against it). A user whose stored credential
// already matches the password is left alone, so that restarts do not
// churn salts. The coordinator may still be starting: it is retried until
// ctx ends.
func (n *Node) loadUsersFile(ctx context.Context, file string) error {
	f, err := os.Open(file)
	if err != nil {
		return fmt.Errorf("--sasl-users-file: %w", err)
	}
	defer f.Close()
	type user struct{ name, password string }
	var users []user
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		name, password, ok := strings.Cut(text, ":")
		if !ok || name == "" || password == "" {
			return fmt.Errorf("--sasl-users-file %s:%d: want name:password", file, line)
		}
		users = append(users, user{name, password})
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("--sasl-users-file: %w", err)
	}
	var mechs []coordapi.ScramMechanism
	for _, m := range n.cfg.Broker.SASLMechanisms {
		if sm := coordapi.ScramMechanismNamed(m); sm != coordapi.ScramUnknown {
			mechs = append(mechs, sm)
		}
	}
	if len(mechs) == 0 {
		mechs = []coordapi.ScramMechanism{coordapi.ScramSHA512}
	}
	var ups []coordapi.ScramUpsertion
	for _, u := range users {
		for _, m := range mechs {
			cred, ok, err := retryCoordinator(ctx, func(ctx context.Context) (coordapi.ScramCredential, bool, error) {
				return n.client.UserScramCredential(ctx, u.name, m)
			})
			if err != nil {
				return fmt.Errorf("--sasl-users-file: user %q: %w", u.name, err)
			}
			if ok && sasl.Verify(cred, u.password) {
				continue
			}
			up, err := sasl.NewUpsertion(u.name, m, u.password, sasl.DefaultIterations)
			if err != nil {
				return err
			}
			ups = append(ups, up)
		}
	}
	if len(ups) == 0 {
		n.log.Info("sasl users file: every user already stored", "users", len(users))
		return nil
	}
	// One request per upsertion: Kafka refuses a user named twice in one.
	for _, up := range ups {
		res, _, err := retryCoordinator(ctx, func(ctx context.Context) ([]coordapi.ScramUserResult, bool, error) {
			r, err := n.client.AlterUserScramCredentials(ctx, nil, []coordapi.ScramUpsertion{up})
			return r, true, err
		})
		if err != nil {
			return fmt.Errorf("--sasl-users-file: user %q: %w", up.User, err)
		}
		for _, r := range res {
			if r.ErrorCode != 0 {
				return fmt.Errorf("--sasl-users-file: user %q: %s (error %d)", r.User, r.ErrorMessage, r.ErrorCode)
			}
		}
	}
	n.log.Info("sasl users file loaded", "users", len(users), "credentials_written", len(ups))
	return nil
}

// retryCoordinator calls fn until it succeeds or fails with a Kafka-level
// error, or ctx ends: the cluster's coordinator may start after the broker.
func retryCoordinator[T any](ctx context.Context, fn func(context.Context) (T, bool, error)) (T, bool, error) {
	deadline := time.Now().Add(time.Minute)
	for {
		v, ok, err := fn(ctx)
		var ke *coordapi.KafkaError
		if err == nil || errors.As(err, &ke) || time.Now().After(deadline) {
			return v, ok, err
		}
		select {
		case <-ctx.Done():
			return v, ok, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// kvGate is /kv's gate (kvindex.Gate): with security on, a principal from
// a client certificate or HTTP Basic checked against the SCRAM users; the
// topic's READ ACL when ACLs are on; and the per-principal quota. nil when
// none of them is on.
type kvGate struct {
	n        *Node
	security bool
	rps      float64
	burst    int

	mu       sync.Mutex
	buckets  map[string]*rate.Limiter
	verified map[[32]byte]time.Time // Basic credentials checked, until when
	logged   map[string]time.Time   // last log line per principal and reason

	denied metric.Int64Counter
	// authz checks the topic's READ ACL; nil when ACLs are off.
	authz topicAuthorizer
}

// topicAuthorizer is the broker's ACL check of a principal on a topic.
type topicAuthorizer interface {
	AuthorizeTopic(principal, host string, op kmsg.ACLOperation, topic string) bool
}

// kvAuthorizer is /kv's READ check, nil when ACLs are off.
func (n *Node) kvAuthorizer() topicAuthorizer {
	if !n.broker.ACLsEnabled() {
		return nil
	}
	return n.broker
}

// Bounds of the gate's memory: past them a map starts over.
const (
	kvGateMaxEntries = 100_000
	kvVerifiedFor    = time.Minute // a checked password is trusted this long
	kvLogEvery       = 10 * time.Second
)

func (n *Node) newKVGate(m metric.Meter, authz topicAuthorizer) kvindex.Gate {
	g := &kvGate{
		n:        n,
		security: n.securityOn(),
		rps:      n.cfg.KVQuotaRPS,
		burst:    n.cfg.KVQuotaBurst,
		buckets:  map[string]*rate.Limiter{},
		verified: map[[32]byte]time.Time{},
		logged:   map[string]time.Time{},
		authz:    authz,
	}
	if !g.security && g.rps <= 0 && authz == nil {
		return nil
	}
	if g.burst <= 0 {
		g.burst = max(1, int(g.rps))
	}
	g.denied, _ = m.Int64Counter("floe.kv.denied", metric.WithUnit("{request}"),
		metric.WithDescription("/kv lookups refused before they were served, by reason: unauthenticated (401), forbidden (403), throttled (429)."))
	return g.admit
}

func (g *kvGate) admit(r *http.Request, topic string) *kvindex.Denial {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	principal := broker.AnonymousPrincipal
	if g.security {
		p, d := g.authenticate(r)
		if d != nil {
			g.deny(r.Context(), "unauthenticated", p, topic, d.Message)
			return d
		}
		principal = p
	}
	if g.authz != nil && !g.authz.AuthorizeTopic(principal, host, kmsg.ACLOperationRead, topic) {
		msg := fmt.Sprintf("Principal %s may not READ topic %q", principal, topic)
		g.deny(r.Context(), "forbidden", principal, topic, msg)
		return &kvindex.Denial{Status: http.StatusForbidden, Code: kvindex.CodeForbidden, Message: msg}
	}
	if g.rps > 0 {
		key := principal
		if principal == broker.AnonymousPrincipal {
			key += "@" + host // without credentials, a quota per client address
		}
		if wait := g.take(key); wait > 0 {
			msg := fmt.Sprintf("Lookup quota of %s exceeded (%g/s, burst %d)", principal, g.rps, g.burst)
			g.deny(r.Context(), "throttled", principal, topic, msg)
			return &kvindex.Denial{Status: http.StatusTooManyRequests, Code: kvindex.CodeTooManyRequests, Message: msg, RetryAfter: wait}
		}
	}
	return nil
}

// authenticate returns the request's principal: its verified client
// certificate's, else its HTTP Basic user's once the password checks.
func (g *kvGate) authenticate(r *http.Request) (string, *kvindex.Denial) {
	if r.TLS != nil && len(r.TLS.VerifiedChains) > 0 && len(r.TLS.PeerCertificates) > 0 {
		return g.n.tls.rules.Principal(r.TLS.PeerCertificates[0]), nil
	}
	user, password, ok := r.BasicAuth()
	if !ok {
		return "", &kvindex.Denial{Status: http.StatusUnauthorized, Code: kvindex.CodeUnauthorized,
			Message: "Authentication required: HTTP Basic with a SCRAM user's password, or a client certificate"}
	}
	principal := "User:" + user
	sum := sha256.Sum256([]byte(user + "\x00" + password))
	now := time.Now()
	g.mu.Lock()
	until, seen := g.verified[sum]
	g.mu.Unlock()
	if seen && now.Before(until) {
		return principal, nil
	}
	ok, err := sasl.CheckPassword(r.Context(), g.n.client, user, password)
	if err != nil || !ok {
		msg := "Authentication failed: invalid username or password"
		if err != nil {
			msg = "Authentication failed: the users could not be read; retry"
		}
		return principal, &kvindex.Denial{Status: http.StatusUnauthorized, Code: kvindex.CodeUnauthorized, Message: msg}
	}
	g.mu.Lock()
	if len(g.verified) >= kvGateMaxEntries {
		clear(g.verified)
	}
	g.verified[sum] = now.Add(kvVerifiedFor)
	g.mu.Unlock()
	return principal, nil
}

// take spends a token of key's bucket and returns 0, or how long until
// one is there (the token is then not spent).
func (g *kvGate) take(key string) time.Duration {
	g.mu.Lock()
	lim := g.buckets[key]
	if lim == nil {
		if len(g.buckets) >= kvGateMaxEntries {
			clear(g.buckets)
		}
		lim = rate.NewLimiter(rate.Limit(g.rps), g.burst)
		g.buckets[key] = lim
	}
	g.mu.Unlock()
	now := time.Now()
	res := lim.ReserveN(now, 1)
	if d := res.DelayFrom(now); d > 0 {
		res.CancelAt(now)
		return d
	}
	return 0
}

// deny counts a refusal and logs it, at most once per kvLogEvery for a
// principal and reason, with the principal and topic and never a
// credential.
func (g *kvGate) deny(ctx context.Context, reason, principal, topic, msg string) {
	g.denied.Add(ctx, 1, metric.WithAttributes(attribute.String("reason", reason)))
	key := reason + " " + principal
	now := time.Now()
	g.mu.Lock()
	last, seen := g.logged[key]
	logIt := !seen || now.Sub(last) >= kvLogEvery
	if logIt {
		if len(g.logged) >= kvGateMaxEntries {
			clear(g.logged)
		}
		g.logged[key] = now
	}
	g.mu.Unlock()
	if logIt {
		g.n.log.Info("kv lookup refused", "reason", reason, "principal", principal, "topic", topic, "message", msg)
	}
}
