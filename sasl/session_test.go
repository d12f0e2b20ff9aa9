package sasl

import (
	"context"
	"errors"
	"testing"

	fsasl "github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/floe-io/floe/coordapi"
)

// users is an in-memory Credentials.
type users map[string]map[coordapi.ScramMechanism]coordapi.ScramCredential

func (u users) UserScramCredential(_ context.Context, user string, m coordapi.ScramMechanism) (coordapi.ScramCredential, bool, error) {
	c, ok := u[user][m]
	return c, ok, nil
}

func newUsers(t testing.TB, pairs ...string) users {
	t.Helper()
	u := users{}
	for i := 0; i < len(pairs); i += 2 {
		u[pairs[i]] = map[coordapi.ScramMechanism]coordapi.ScramCredential{}
		for _, m := range []coordapi.ScramMechanism{coordapi.ScramSHA256, coordapi.ScramSHA512} {
			up, err := NewUpsertion(pairs[i], m, pairs[i+1], DefaultIterations)
			if err != nil {
				t.Fatal(err)
			}
			c, err := Derive(m, up.SaltedPassword, up.Salt, up.Iterations)
			if err != nil {
				t.Fatal(err)
			}
			u[pairs[i]][m] = c
		}
	}
	return u
}

// exchange runs franz-go's client side of mech against a server Session.
func exchange(t *testing.T, creds Credentials, name string, mech fsasl.Mechanism) (string, error) {
	t.Helper()
	ctx := context.Background()
	srv, err := NewSession(name, creds)
	if err != nil {
		t.Fatal(err)
	}
	cs, msg, err := mech.Authenticate(ctx, "127.0.0.1:9092")
	if err != nil {
		t.Fatal(err)
	}
	for {
		resp, done, err := srv.Step(ctx, msg)
		if err != nil {
			return "", err
		}
		clientDone, next, err := cs.Challenge(resp)
		if err != nil {
			t.Fatalf("client rejects the server's answer: %v", err)
		}
		if done {
			if !clientDone {
				t.Fatal("server done before the client")
			}
			return srv.Username(), nil
		}
		msg = next
	}
}

func TestSessions(t *testing.T) {
	creds := newUsers(t, "alice", "alice-secret", "a,b=c", "odd-name")
	for _, tc := range []struct {
		name, mech string
		client     fsasl.Mechanism
		wantUser   string // "" wants ErrAuthFailed
	}{
		{"plain", Plain, plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism(), "alice"},
		{"plain bad", Plain, plain.Auth{User: "alice", Pass: "nope"}.AsMechanism(), ""},
		{"plain unknown", Plain, plain.Auth{User: "bob", Pass: "x"}.AsMechanism(), ""},
		{"plain authzid", Plain, plain.Auth{Zid: "bob", User: "alice", Pass: "alice-secret"}.AsMechanism(), ""},
		{"scram-256", ScramSHA256, scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha256Mechanism(), "alice"},
		{"scram-512", ScramSHA512, scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism(), "alice"},
		{"scram escaped name", ScramSHA512, scram.Auth{User: "a,b=c", Pass: "odd-name"}.AsSha512Mechanism(), "a,b=c"},
		{"scram bad", ScramSHA256, scram.Auth{User: "alice", Pass: "nope"}.AsSha256Mechanism(), ""},
		{"scram unknown", ScramSHA512, scram.Auth{User: "bob", Pass: "x"}.AsSha512Mechanism(), ""},
		{"scram wrong mechanism hash", ScramSHA256, scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism(), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			user, err := exchange(t, creds, tc.mech, tc.client)
			switch {
			case tc.wantUser == "" && !errors.Is(err, ErrAuthFailed):
				t.Fatalf("authenticated as %q (%v), want a failure", user, err)
			case tc.wantUser != "" && (err != nil || user != tc.wantUser):
				t.Fatalf("user %q, %v; want %q", user, err, tc.wantUser)
			}
		})
	}
}

// TestScramNonceRule: a client-final nonce that ends with the server's
// combined nonce (librdkafka repeats its own in front) is accepted, as
// Kafka accepts it; one that does not is refused.
func TestScramNonceRule(t *testing.T) {
	creds := newUsers(t, "alice", "alice-secret")
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		mangle func(cnonce, nonce string) string
		ok     bool
	}{
		{"exact", func(_, n string) string { return n }, true},
		{"librdkafka", func(c, n string) string { return c + n }, true},
		{"other", func(c, n string) string { return n[:len(n)-1] + "x" }, false},
	} {
		srv, _ := NewSession(ScramSHA256, creds)
		cnonce := "fyko+d2lbbFgONRv9qkxdawL"
		first := "n,,n=alice,r=" + cnonce
		s1, _, err := srv.Step(ctx, []byte(first))
		if err != nil {
			t.Fatal(err)
		}
		final := clientFinal(t, creds["alice"][coordapi.ScramSHA256], "alice-secret", "n=alice,r="+cnonce, string(s1), tc.mangle)
		_, done, err := srv.Step(ctx, []byte(final))
		if tc.ok != (err == nil) || !done {
			t.Errorf("%s: done %v, %v; want ok %v", tc.name, done, err, tc.ok)
		}
	}
}

// clientFinal computes a client-final message by RFC 5802, with the nonce
// mangle returns.
func clientFinal(t *testing.T, cred coordapi.ScramCredential, password, bare, s1 string, mangle func(cnonce, nonce string) string) string {
	t.Helper()
	var nonce string
	for _, a := range splitAttrs(s1) {
		if len(a) > 2 && a[:2] == "r=" {
			nonce = a[2:]
		}
	}
	h := hashOf(cred.Mechanism)
	sp, err := SaltPassword(cred.Mechanism, password, cred.Salt, int(cred.Iterations))
	if err != nil {
		t.Fatal(err)
	}
	clientKey := mac(h, sp, "Client Key")
	withoutProof := "c=biws,r=" + mangle(bare[len("n=alice,r="):], nonce)
	sig := mac(h, cred.StoredKey, bare+","+s1+","+withoutProof)
	proof := make([]byte, len(sig))
	for i := range sig {
		proof[i] = clientKey[i] ^ sig[i]
	}
	return withoutProof + ",p=" + b64(proof)
}
