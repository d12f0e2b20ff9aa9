package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	kgosasl "github.com/twmb/franz-go/pkg/sasl"

	"github.com/floe-io/floe/broker"
	"github.com/floe-io/floe/coordinator"
	"github.com/floe-io/floe/internal/testkit/certtest"
	"github.com/floe-io/floe/internal/testkit/floetest"
	"github.com/floe-io/floe/kvindex"
	"github.com/floe-io/floe/node"
	floesasl "github.com/floe-io/floe/sasl"
	"github.com/floe-io/floe/tlsconfig"
)

// allMechanisms are the SASL mechanisms floe serves.
var allMechanisms = []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"}

// usersFile writes a --sasl-users-file.
func usersFile(t testing.TB, lines ...string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "users")
	if err := os.WriteFile(p, []byte("# floe test users\n\n"+strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// mechanism returns franz-go's client side of a SASL mechanism.
func mechanism(name, user, password string) kgosasl.Mechanism {
	m, ok := floesasl.Client(name, user, password)
	if !ok {
		panic("e2e: no SASL mechanism " + name)
	}
	return m
}

// saslNode starts a node requiring SASL with every mechanism, with the
// users of the file, and the key index on.
func saslNode(t testing.TB, mods ...func(*node.Config)) *node.Node {
	t.Helper()
	cfg := node.Config{
		SASLUsersFile: usersFile(t, "admin:admin-secret", "alice:alice-secret"),
		Broker:        broker.Options{SASLMechanisms: allMechanisms, AutoCreateTopics: true},
		Coordinator:   coordinator.Options{KVIndexEnabled: true},
	}
	for _, m := range mods {
		m(&cfg)
	}
	return floetest.StartNode(t, cfg)
}

// rawRequest frames req (version v) as a client would.
func rawRequest(req kmsg.Request, v int16, corr int32) []byte {
	req.SetVersion(v)
	return kmsg.NewRequestFormatter(kmsg.FormatterClientID("raw")).AppendRequest(nil, req, corr)
}

// readResponse reads one response frame's body after its correlation id
// (no header tags: the tests use non-flexible versions).
func readResponse(t *testing.T, c net.Conn) ([]byte, error) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	var size [4]byte
	if _, err := io.ReadFull(c, size[:]); err != nil {
		return nil, err
	}
	body := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(c, body); err != nil {
		return nil, err
	}
	return body[4:], nil
}

// wantClosed checks that the broker closed c without answering.
func wantClosed(t *testing.T, c net.Conn, what string) {
	t.Helper()
	body, err := readResponse(t, c)
	if err == nil {
		t.Fatalf("%s: answered (%d bytes) instead of closing the connection", what, len(body))
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("%s: connection neither answered nor closed", what)
	}
}

// TestSASL: SASL PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 with franz-go and
// kcat (librdkafka), good and bad credentials, users from the users file
// and from AlterUserScramCredentials, and unauthenticated connections
// closed unanswered.
func TestSASL(t *testing.T) {
	n := saslNode(t)
	ctx := context.Background()
	for i, mech := range allMechanisms {
		t.Run(mech, func(t *testing.T) {
			topic := fmt.Sprintf("sasl-%d", i)
			cl := newFranzClient(t, n.KafkaAddr(), kgo.SASL(mechanism(mech, "alice", "alice-secret")),
				kgo.DefaultProduceTopic(topic), kgo.AllowAutoTopicCreation(), kgo.ConsumeTopics(topic))
			if err := cl.ProduceSync(ctx, &kgo.Record{Key: []byte("k"), Value: []byte(mech)}).FirstErr(); err != nil {
				t.Fatalf("produce as alice over %s: %v", mech, err)
			}
			fctx, cancel := context.WithTimeout(ctx, 15*time.Second)
			defer cancel()
			fs := cl.PollFetches(fctx)
			if err := fs.Err0(); err != nil {
				t.Fatalf("fetch: %v", err)
			}
			if recs := fs.Records(); len(recs) != 1 || string(recs[0].Value) != mech {
				t.Fatalf("fetched %v", recs)
			}

			bad := newFranzClient(t, n.KafkaAddr(), kgo.SASL(mechanism(mech, "alice", "wrong")), kgo.RequestRetries(0))
			if err := bad.Ping(ctx); !errors.Is(err, kerr.SaslAuthenticationFailed) {
				t.Fatalf("bad password over %s: %v, want SASL_AUTHENTICATION_FAILED", mech, err)
			}
			unknown := newFranzClient(t, n.KafkaAddr(), kgo.SASL(mechanism(mech, "mallory", "x")), kgo.RequestRetries(0))
			if err := unknown.Ping(ctx); !errors.Is(err, kerr.SaslAuthenticationFailed) {
				t.Fatalf("unknown user over %s: %v, want SASL_AUTHENTICATION_FAILED", mech, err)
			}
		})
	}

	t.Run("unauthenticated", func(t *testing.T) {
		for _, req := range []kmsg.Request{kmsg.NewPtrMetadataRequest(), kmsg.NewPtrProduceRequest(), kmsg.NewPtrFetchRequest(), kmsg.NewPtrCreateTopicsRequest()} {
			c, err := net.Dial("tcp", n.KafkaAddr())
			if err != nil {
				t.Fatal(err)
			}
			// ApiVersions is answered before authentication...
			if _, err := c.Write(rawRequest(kmsg.NewPtrApiVersionsRequest(), 0, 1)); err != nil {
				t.Fatal(err)
			}
			if _, err := readResponse(t, c); err != nil {
				t.Fatalf("ApiVersions before authentication: %v", err)
			}
			// ...anything else closes the connection unanswered.
			v := int16(4)
			if _, ok := req.(*kmsg.ProduceRequest); ok {
				v = 3
			}
			if _, err := c.Write(rawRequest(req, v, 2)); err != nil {
				t.Fatal(err)
			}
			wantClosed(t, c, kmsg.NameForKey(req.Key())+" before authentication")
			c.Close()
		}
	})

	t.Run("handshake v0 unframed", func(t *testing.T) {
		c, err := net.Dial("tcp", n.KafkaAddr())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		hs := kmsg.NewPtrSASLHandshakeRequest()
		hs.Mechanism = "PLAIN"
		c.Write(rawRequest(hs, 0, 1))
		body, err := readResponse(t, c)
		if err != nil || binary.BigEndian.Uint16(body) != 0 {
			t.Fatalf("handshake v0: %x, %v", body, err)
		}
		token := []byte("\x00alice\x00alice-secret")
		c.Write(binary.BigEndian.AppendUint32(nil, uint32(len(token))))
		c.Write(token)
		var size [4]byte
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.ReadFull(c, size[:]); err != nil || binary.BigEndian.Uint32(size[:]) != 0 {
			t.Fatalf("unframed PLAIN answer: %x, %v", size, err)
		}
		// Authenticated: Metadata is answered.
		c.Write(rawRequest(kmsg.NewPtrMetadataRequest(), 4, 2))
		if _, err := readResponse(t, c); err != nil {
			t.Fatalf("metadata after an unframed PLAIN exchange: %v", err)
		}
	})

	t.Run("admin users", func(t *testing.T) {
		adm := kadm.NewClient(newFranzClient(t, n.KafkaAddr(), kgo.SASL(mechanism("SCRAM-SHA-512", "admin", "admin-secret"))))
		res, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "carol", Mechanism: kadm.ScramSha256, Iterations: 8192, Password: "carol-secret"}})
		if err != nil {
			t.Fatal(err)
		}
		if r := res["carol"]; r.Err != nil {
			t.Fatal(r.Err)
		}
		carol := newFranzClient(t, n.KafkaAddr(), kgo.SASL(mechanism("SCRAM-SHA-256", "carol", "carol-secret")))
		if err := carol.Ping(ctx); err != nil {
			t.Fatalf("carol over SCRAM-SHA-256: %v", err)
		}
		// PLAIN checks against the same stored credential.
		carolPlain := newFranzClient(t, n.KafkaAddr(), kgo.SASL(mechanism("PLAIN", "carol", "carol-secret")))
		if err := carolPlain.Ping(ctx); err != nil {
			t.Fatalf("carol over PLAIN: %v", err)
		}
		described, err := adm.DescribeUserSCRAMs(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if d := described["carol"]; len(d.CredInfos) != 1 || d.CredInfos[0].Iterations != 8192 || d.CredInfos[0].Mechanism != kadm.ScramSha256 {
			t.Fatalf("carol described as %+v", d)
		}
		if d := described["alice"]; len(d.CredInfos) != 3-1 { // the users file stores both SCRAM mechanisms
			t.Fatalf("alice described as %+v", d)
		}
		if _, err := adm.AlterUserSCRAMs(ctx, []kadm.DeleteSCRAM{{User: "carol", Mechanism: kadm.ScramSha256}}, nil); err != nil {
			t.Fatal(err)
		}
		gone := newFranzClient(t, n.KafkaAddr(), kgo.SASL(mechanism("SCRAM-SHA-256", "carol", "carol-secret")), kgo.RequestRetries(0))
		if err := gone.Ping(ctx); !errors.Is(err, kerr.SaslAuthenticationFailed) {
			t.Fatalf("deleted carol: %v", err)
		}
	})

	t.Run("kcat", func(t *testing.T) {
		auth := []string{"-b", n.KafkaAddr(), "-X", "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanisms=SCRAM-SHA-512",
			"-X", "sasl.username=alice", "-X", "sasl.password=alice-secret"}
		runKcat(t, 30*time.Second, "one\ntwo\n", append(auth, "-P", "-t", "sasl-kcat")...)
		out, _ := runKcat(t, 30*time.Second, "", append(auth, "-C", "-t", "sasl-kcat", "-o", "beginning", "-e", "-q")...)
		if out != "one\ntwo\n" {
			t.Fatalf("kcat consumed %q", out)
		}
	})

	if v, err := floetest.Metric(n.HTTPAddr(), "floe_kafka_authentications_total", "result", "failure"); err != nil || v < 6 {
		t.Errorf("failed authentications counted: %v, %v (want at least 6)", v, err)
	}
}

// TestSASLReauth: with connections.max.reauth.ms, SaslAuthenticate tells
// the session lifetime, and franz-go re-authenticates on its own and keeps
// producing across three of them.
func TestSASLReauth(t *testing.T) {
	const lifetime = 1500 * time.Millisecond
	n := saslNode(t, func(c *node.Config) { c.Broker.ReauthInterval = lifetime })
	ctx := context.Background()

	c, err := net.Dial("tcp", n.KafkaAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Mechanism = "PLAIN"
	c.Write(rawRequest(hs, 1, 1))
	if _, err := readResponse(t, c); err != nil {
		t.Fatal(err)
	}
	au := kmsg.NewPtrSASLAuthenticateRequest()
	au.SASLAuthBytes = []byte("\x00alice\x00alice-secret")
	c.Write(rawRequest(au, 1, 2))
	body, err := readResponse(t, c)
	if err != nil {
		t.Fatal(err)
	}
	resp := kmsg.NewPtrSASLAuthenticateResponse()
	resp.Version = 1
	if err := resp.ReadFrom(body); err != nil || resp.ErrorCode != 0 || resp.SessionLifetimeMillis != lifetime.Milliseconds() {
		t.Fatalf("authenticate v1: %+v, %v", resp, err)
	}
	c.Write(rawRequest(kmsg.NewPtrMetadataRequest(), 4, 3))
	if _, err := readResponse(t, c); err != nil {
		t.Fatalf("metadata within the session: %v", err)
	}

	cl := newFranzClient(t, n.KafkaAddr(), kgo.SASL(mechanism("SCRAM-SHA-256", "alice", "alice-secret")),
		kgo.DefaultProduceTopic("reauth"), kgo.AllowAutoTopicCreation())
	// Produce across three lifetimes: every produce succeeds.
	for end := time.Now().Add(3 * lifetime); time.Now().Before(end); {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatalf("produce across re-authentications: %v", err)
		}
	}
	if v, err := floetest.Metric(n.HTTPAddr(), "floe_kafka_authentications_total", "mechanism", "SCRAM-SHA-256", "result", "success"); err != nil || v < 3 {
		t.Errorf("SCRAM-SHA-256 authentications: %v, %v (want at least 3: franz-go re-authenticates)", v, err)
	}
	// A connection past its session's end is refused: broker's
	// TestSessionExpiry, on the broker's clock.
}

// testCerts makes a CA, a server certificate and a client certificate for
// CN=alice.
func testCerts(t *testing.T) (ca *certtest.CA, server, client certtest.Pair) {
	dir := t.TempDir()
	ca = certtest.NewCA(t, dir, "floe")
	return ca, ca.Server("server"), ca.Client("alice", "alice")
}

func clientTLS(t *testing.T, ca *certtest.CA, cert *certtest.Pair) *tls.Config {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.PEM)
	cfg := &tls.Config{RootCAs: pool}
	if cert != nil {
		pair, err := tls.LoadX509KeyPair(cert.CertFile, cert.KeyFile)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg
}

// TestTLS: TLS and mutual TLS on the Kafka and HTTP listeners with
// franz-go and kcat, SASL over TLS (SASL_SSL), and /kv over HTTPS with a
// client certificate or HTTP Basic.
func TestTLS(t *testing.T) {
	ca, srv, client := testCerts(t)
	ctx := context.Background()

	t.Run("mtls", func(t *testing.T) {
		n := floetest.StartNode(t, node.Config{
			Broker:      broker.Options{AutoCreateTopics: true},
			TLS:         node.TLSConfig{Files: tlsFiles(srv, ca.File)},
			Coordinator: coordinator.Options{KVIndexEnabled: true},
		})
		cl := newFranzClient(t, n.KafkaAddr(), kgo.DialTLSConfig(clientTLS(t, ca, &client)),
			kgo.DefaultProduceTopic("tls"), kgo.AllowAutoTopicCreation(), kgo.ConsumeTopics("tls"))
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("over tls")}).FirstErr(); err != nil {
			t.Fatalf("produce over mTLS: %v", err)
		}
		fctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		defer cancel()
		if fs := cl.PollFetches(fctx); fs.Err0() != nil || len(fs.Records()) != 1 {
			t.Fatalf("fetch over mTLS: %v %v", fs.Err0(), fs.Records())
		}
		noCert := newFranzClient(t, n.KafkaAddr(), kgo.DialTLSConfig(clientTLS(t, ca, nil)), kgo.RequestRetries(0),
			kgo.RetryTimeout(time.Second))
		if err := noCert.Ping(ctx); err == nil {
			t.Fatal("a client without a certificate got in")
		}
		plainText := newFranzClient(t, n.KafkaAddr(), kgo.RequestRetries(0), kgo.RetryTimeout(time.Second), kgo.DialTimeout(2*time.Second))
		if err := plainText.Ping(ctx); err == nil {
			t.Fatal("a plaintext client got in")
		}

		args := []string{"-b", n.KafkaAddr(), "-X", "security.protocol=SSL", "-X", "ssl.ca.location=" + ca.File,
			"-X", "ssl.certificate.location=" + client.CertFile, "-X", "ssl.key.location=" + client.KeyFile}
		runKcat(t, 30*time.Second, "a\nb\n", append(args, "-P", "-t", "tls-kcat")...)
		if out, _ := runKcat(t, 30*time.Second, "", append(args, "-C", "-t", "tls-kcat", "-o", "beginning", "-e", "-q")...); out != "a\nb\n" {
			t.Fatalf("kcat over mTLS consumed %q", out)
		}

		// /kv over HTTPS: the client certificate is the credential; none
		// is 401. /healthz stays open without one.
		adm := kadm.NewClient(cl)
		createKVTopic(t, adm, "tls-kv", 1)
		produceAll(t, cl, &kgo.Record{Topic: "tls-kv", Key: []byte("k"), Value: []byte("v")})
		withCert := &http.Client{Transport: &http.Transport{TLSClientConfig: clientTLS(t, ca, &client)}}
		withoutCert := &http.Client{Transport: &http.Transport{TLSClientConfig: clientTLS(t, ca, nil)}}
		if st, body := httpsGet(t, withCert, "https://"+n.HTTPAddr()+"/kv/tls-kv/k"); st != 200 || body != "v" {
			t.Fatalf("/kv with a client certificate: %d %q", st, body)
		}
		if st, _ := httpsGet(t, withoutCert, "https://"+n.HTTPAddr()+"/kv/tls-kv/k"); st != 401 {
			t.Fatalf("/kv without credentials: %d", st)
		}
		if st, _ := httpsGet(t, withoutCert, "https://"+n.HTTPAddr()+"/healthz"); st != 200 {
			t.Fatalf("/healthz without a certificate: %d", st)
		}
	})

	t.Run("sasl_ssl", func(t *testing.T) {
		n := saslNode(t, func(c *node.Config) { c.TLS = node.TLSConfig{Files: tlsFiles(srv, "")} })
		cl := newFranzClient(t, n.KafkaAddr(), kgo.DialTLSConfig(clientTLS(t, ca, nil)),
			kgo.SASL(mechanism("SCRAM-SHA-512", "alice", "alice-secret")), kgo.DefaultProduceTopic("sasl-ssl"), kgo.AllowAutoTopicCreation())
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("x")}).FirstErr(); err != nil {
			t.Fatalf("produce over SASL_SSL: %v", err)
		}
		args := []string{"-b", n.KafkaAddr(), "-X", "security.protocol=SASL_SSL", "-X", "ssl.ca.location=" + ca.File,
			"-X", "sasl.mechanisms=SCRAM-SHA-256", "-X", "sasl.username=alice", "-X", "sasl.password=alice-secret"}
		runKcat(t, 30*time.Second, "c\n", append(args, "-P", "-t", "sasl-ssl")...)
		if out, _ := runKcat(t, 30*time.Second, "", append(args, "-C", "-t", "sasl-ssl", "-o", "beginning", "-e", "-q")...); out != "x\nc\n" {
			t.Fatalf("kcat over SASL_SSL consumed %q", out)
		}
		// /kv over HTTPS with HTTP Basic.
		createKVTopic(t, kadm.NewClient(cl), "ssl-kv", 1)
		produceAll(t, cl, &kgo.Record{Topic: "ssl-kv", Key: []byte("k"), Value: []byte("v")})
		hc := &http.Client{Transport: &http.Transport{TLSClientConfig: clientTLS(t, ca, nil)}}
		if st, body := httpsGet(t, hc, "https://alice:alice-secret@"+n.HTTPAddr()+"/kv/ssl-kv/k"); st != 200 || body != "v" {
			t.Fatalf("/kv over HTTPS with Basic: %d %q", st, body)
		}
	})
}

func tlsFiles(srv certtest.Pair, clientCA string) (f tlsconfig.ServerFiles) {
	f.CertFile, f.KeyFile, f.ClientCAFile = srv.CertFile, srv.KeyFile, clientCA
	return f
}

func httpsGet(t *testing.T, hc *http.Client, url string) (int, string) {
	t.Helper()
	resp, err := hc.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// TestKVAuthAndQuota: with SASL on, /kv takes HTTP Basic checked against
// the SCRAM users (401 without or with bad credentials, the JSON error
// body and WWW-Authenticate), and a per-principal token bucket answers 429
// with Retry-After once spent.
func TestKVAuthAndQuota(t *testing.T) {
	n := saslNode(t, func(c *node.Config) { c.KVQuotaRPS, c.KVQuotaBurst = 0.5, 3 })
	ctx := context.Background()
	cl := newFranzClient(t, n.KafkaAddr(), kgo.SASL(mechanism("PLAIN", "admin", "admin-secret")))
	createKVTopic(t, kadm.NewClient(cl), "kv-auth", 1)
	produceAll(t, cl, &kgo.Record{Topic: "kv-auth", Key: []byte("k"), Value: []byte("v")})
	_ = ctx

	get := func(userinfo string) (*http.Response, kvindex.ErrorBody, string) {
		t.Helper()
		resp, err := http.Get("http://" + userinfo + n.HTTPAddr() + "/kv/kv-auth/k")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		var eb kvindex.ErrorBody
		if resp.StatusCode != 200 {
			if err := json.Unmarshal(body, &eb); err != nil {
				t.Fatalf("%d with a body that is not the JSON error: %q", resp.StatusCode, body)
			}
		}
		return resp, eb, string(body)
	}
	resp, eb, _ := get("")
	if resp.StatusCode != 401 || eb.ErrorCode != kvindex.CodeUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Basic") {
		t.Fatalf("no credentials: %d %+v %v", resp.StatusCode, eb, resp.Header)
	}
	if resp, eb, _ = get("alice:wrong@"); resp.StatusCode != 401 || strings.Contains(eb.Message, "wrong") {
		t.Fatalf("bad password: %d %+v", resp.StatusCode, eb)
	}
	// alice's bucket holds 3: three lookups, then 429.
	for i := range 3 {
		if resp, _, body := get("alice:alice-secret@"); resp.StatusCode != 200 || body != "v" {
			t.Fatalf("lookup %d as alice: %d %q", i, resp.StatusCode, body)
		}
	}
	resp, eb, _ = get("alice:alice-secret@")
	if resp.StatusCode != 429 || eb.ErrorCode != kvindex.CodeTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("past the quota: %d %+v %v", resp.StatusCode, eb, resp.Header)
	}
	// Another principal has its own bucket.
	if resp, _, _ := get("admin:admin-secret@"); resp.StatusCode != 200 {
		t.Fatalf("admin after alice's quota: %d", resp.StatusCode)
	}
	if resp, err := http.Get("http://" + n.HTTPAddr() + "/healthz"); err != nil || resp.StatusCode != 200 {
		t.Fatalf("/healthz: %v %v", resp, err)
	}
	for _, reason := range []string{"unauthenticated", "throttled"} {
		if v, err := floetest.Metric(n.HTTPAddr(), "floe_kv_denied_total", "reason", reason); err != nil || v < 1 {
			t.Errorf("kv denials %s: %v %v", reason, v, err)
		}
	}
}

// TestACLsWithSASL: ACLs against principals that authenticated with SASL:
// a super user grants alice a prefixed topic and a group; alice produces,
// consumes (franz-go and kcat) and looks keys up there and nowhere else,
// does not see other topics in Metadata, and may not manage users; bob,
// without ACLs, may do nothing. /kv answers 403 without the READ ACL.
func TestACLsWithSASL(t *testing.T) {
	n := saslNode(t, func(c *node.Config) {
		c.Broker.ACLsEnabled = true
		c.Broker.SuperUsers = []string{"User:admin"}
		c.SASLUsersFile = usersFile(t, "admin:admin-secret", "alice:alice-secret", "bob:bob-secret")
	})
	ctx := context.Background()
	admin := newFranzClient(t, n.KafkaAddr(), kgo.SASL(mechanism("SCRAM-SHA-512", "admin", "admin-secret")))
	adm := kadm.NewClient(admin)
	createKVTopic(t, adm, "orders-kv", 1)
	createKVTopic(t, adm, "secret-kv", 1)
	produceAll(t, admin, &kgo.Record{Topic: "orders-kv", Key: []byte("k"), Value: []byte("order")},
		&kgo.Record{Topic: "secret-kv", Key: []byte("k"), Value: []byte("secret")})
	acls := kadm.NewACLs().Allow("User:alice").Topics("orders").ResourcePatternType(kadm.ACLPatternPrefixed).
		Operations(kadm.OpRead, kadm.OpWrite, kadm.OpDescribe)
	if _, err := adm.CreateACLs(ctx, acls); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.CreateACLs(ctx, kadm.NewACLs().Allow("User:alice").Groups("alice-group").Operations(kadm.OpRead)); err != nil {
		t.Fatal(err)
	}

	alice := newFranzClient(t, n.KafkaAddr(), kgo.SASL(mechanism("SCRAM-SHA-256", "alice", "alice-secret")),
		kgo.ConsumeTopics("orders-kv"), kgo.ConsumerGroup("alice-group"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	// The broker that served the ACLs applies them before answering.
	if err := alice.ProduceSync(ctx, &kgo.Record{Topic: "orders-kv", Key: []byte("k2"), Value: []byte("mine")}).FirstErr(); err != nil {
		t.Fatalf("alice produces to orders-kv: %v", err)
	}
	if err := alice.ProduceSync(ctx, &kgo.Record{Topic: "secret-kv", Value: []byte("x")}).FirstErr(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("alice produces to secret-kv: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	fctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	got := 0
	for got < 2 {
		fs := alice.PollFetches(fctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("alice consumes orders-kv in alice-group: %v", err)
		}
		got += len(fs.Records())
	}
	if err := alice.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatalf("alice commits in alice-group: %v", err)
	}
	topics, err := kadm.NewClient(alice).ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if topics.Has("secret-kv") || !topics.Has("orders-kv") {
		t.Fatalf("alice's Metadata lists %v", topics.Names())
	}
	res, err := kadm.NewClient(alice).AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "mallory", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "x"}})
	if err == nil {
		err = res["mallory"].Err
	}
	if !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("alice alters users: %v, want CLUSTER_AUTHORIZATION_FAILED", err)
	}
	bob := newFranzClient(t, n.KafkaAddr(), kgo.SASL(mechanism("PLAIN", "bob", "bob-secret")), kgo.RequestRetries(0))
	if err := bob.ProduceSync(ctx, &kgo.Record{Topic: "orders-kv", Value: []byte("x")}).FirstErr(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("bob produces: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}

	// kcat (librdkafka) as alice.
	args := []string{"-b", n.KafkaAddr(), "-X", "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanisms=SCRAM-SHA-512",
		"-X", "sasl.username=alice", "-X", "sasl.password=alice-secret"}
	if out, _ := runKcat(t, 30*time.Second, "", append(args, "-C", "-t", "orders-kv", "-o", "beginning", "-e", "-q", "-f", "%k=%s\n")...); out != "k=order\nk2=mine\n" {
		t.Fatalf("kcat as alice consumed %q", out)
	}

	// /kv: the topic's READ ACL, 403 without it.
	for _, tc := range []struct {
		user, topic string
		status      int
	}{
		{"alice:alice-secret", "orders-kv", 200},
		{"alice:alice-secret", "secret-kv", 403},
		{"bob:bob-secret", "orders-kv", 403},
		{"admin:admin-secret", "secret-kv", 200},
	} {
		resp, err := http.Get("http://" + tc.user + "@" + n.HTTPAddr() + "/kv/" + tc.topic + "/k")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status {
			t.Errorf("/kv/%s/k as %s: %d %s, want %d", tc.topic, tc.user, resp.StatusCode, body, tc.status)
		}
		if tc.status == 403 {
			var eb kvindex.ErrorBody
			if json.Unmarshal(body, &eb) != nil || eb.ErrorCode != kvindex.CodeForbidden {
				t.Errorf("403 body %q", body)
			}
		}
	}
	if v, err := floetest.Metric(n.HTTPAddr(), "floe_kv_denied_total", "reason", "forbidden"); err != nil || v < 2 {
		t.Errorf("kv forbidden: %v %v", v, err)
	}
}

// TestPprofGate checks who may read /debug/pprof: anyone without security;
// with SASL, a request with a SCRAM user's HTTP Basic credentials (401
// without), and with ACLs on only a super user (403 for another); with
// TLS alone, which authenticates no one, nobody (404).
func TestPprofGate(t *testing.T) {
	ca, srv, _ := testCerts(t)
	plain := floetest.StartNode(t, node.Config{})
	sasl := saslNode(t)
	acls := saslNode(t, func(c *node.Config) {
		c.Broker.ACLsEnabled, c.Broker.SuperUsers = true, []string{"User:admin"}
	})
	tlsOnly := floetest.StartNode(t, node.Config{TLS: node.TLSConfig{Files: tlsFiles(srv, "")}})
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: clientTLS(t, ca, nil)}}
	for _, tc := range []struct {
		name, url string
		status    int
	}{
		{"no security", "http://" + plain.HTTPAddr(), 200},
		{"sasl, no credentials", "http://" + sasl.HTTPAddr(), 401},
		{"sasl, bad password", "http://alice:wrong@" + sasl.HTTPAddr(), 401},
		{"sasl, a user", "http://alice:alice-secret@" + sasl.HTTPAddr(), 200},
		{"acls, not a super user", "http://alice:alice-secret@" + acls.HTTPAddr(), 403},
		{"acls, a super user", "http://admin:admin-secret@" + acls.HTTPAddr(), 200},
		{"tls alone", "https://" + tlsOnly.HTTPAddr(), 404},
	} {
		if st, _ := httpsGet(t, hc, tc.url+"/debug/pprof/"); st != tc.status {
			t.Errorf("%s: /debug/pprof/ answered %d, want %d", tc.name, st, tc.status)
		}
		if st, _ := httpsGet(t, hc, tc.url+"/healthz"); st != 200 {
			t.Errorf("%s: /healthz answered %d", tc.name, st)
		}
	}
}
