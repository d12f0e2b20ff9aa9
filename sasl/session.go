package sasl

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/floe-io/floe/coordapi"
)

// Mechanism names, as clients send them in SaslHandshake.
const (
	Plain       = "PLAIN"
	ScramSHA256 = "SCRAM-SHA-256"
	ScramSHA512 = "SCRAM-SHA-512"
)

// ErrAuthFailed marks a failed authentication: bad credentials, an unknown
// user or a malformed exchange. The broker answers it with
// SASL_AUTHENTICATION_FAILED and closes the connection.
var ErrAuthFailed = errors.New("authentication failed")

// Credentials finds a user's stored SCRAM credential: the coordinator's
// users. ok is false for a user without one for m.
type Credentials interface {
	UserScramCredential(ctx context.Context, user string, m coordapi.ScramMechanism) (cred coordapi.ScramCredential, ok bool, err error)
}

// Session is one authentication exchange on one connection.
type Session interface {
	// Step takes the client's next message and returns the answer to send
	// and whether the exchange is over. An error wrapping ErrAuthFailed
	// means the client failed to authenticate; other errors mean the
	// credentials could not be read (the coordinator is unreachable).
	Step(ctx context.Context, msg []byte) (resp []byte, done bool, err error)
	// Username is the authenticated user once Step reported done.
	Username() string
	// Claimed is the user the client said it is, authenticated or not
	// ("" before it said): for logs of failed exchanges.
	Claimed() string
}

// NewSession starts an exchange of mechanism (Plain, ScramSHA256 or
// ScramSHA512) against creds; an unknown mechanism is an error.
func NewSession(mechanism string, creds Credentials) (Session, error) {
	switch mechanism {
	case Plain:
		return &plainSession{creds: creds}, nil
	case ScramSHA256, ScramSHA512:
		return &scramSession{creds: creds, mech: coordapi.ScramMechanismNamed(mechanism)}, nil
	}
	return nil, fmt.Errorf("sasl: unsupported mechanism %q", mechanism)
}

// plainSession checks "authzid NUL user NUL password" (RFC 4616) against
// the user's stored SCRAM credential, the strongest it has.
type plainSession struct {
	creds   Credentials
	user    string
	claimed string
}

// ParsePlain splits a PLAIN message into its authorization id, user and
// password.
func ParsePlain(msg []byte) (authzid, user, password string, err error) {
	parts := bytes.Split(msg, []byte{0})
	if len(parts) != 3 {
		return "", "", "", fmt.Errorf("%w: a PLAIN message is authzid NUL user NUL password", ErrAuthFailed)
	}
	if len(parts[1]) == 0 || len(parts[2]) == 0 {
		return "", "", "", fmt.Errorf("%w: empty PLAIN user or password", ErrAuthFailed)
	}
	return string(parts[0]), string(parts[1]), string(parts[2]), nil
}

func (s *plainSession) Step(ctx context.Context, msg []byte) ([]byte, bool, error) {
	if s.user != "" {
		return nil, true, fmt.Errorf("%w: PLAIN exchange already over", ErrAuthFailed)
	}
	authzid, user, password, err := ParsePlain(msg)
	if err != nil {
		return nil, true, err
	}
	s.claimed = user
	if authzid != "" && authzid != user {
		return nil, true, fmt.Errorf("%w: authorization id %q is not the user %q", ErrAuthFailed, authzid, user)
	}
	ok, err := CheckPassword(ctx, s.creds, user, password)
	if err != nil {
		return nil, true, err
	}
	if !ok {
		return nil, true, fmt.Errorf("%w: invalid username or password", ErrAuthFailed)
	}
	s.user = user
	return nil, true, nil
}

func (s *plainSession) Username() string { return s.user }

func (s *plainSession) Claimed() string { return s.claimed }

// CheckPassword reports whether password is user's, checked against the
// user's SCRAM-SHA-512 credential, else its SCRAM-SHA-256 one. A user
// without either fails.
func CheckPassword(ctx context.Context, creds Credentials, user, password string) (bool, error) {
	for _, m := range []coordapi.ScramMechanism{coordapi.ScramSHA512, coordapi.ScramSHA256} {
		cred, ok, err := creds.UserScramCredential(ctx, user, m)
		if err != nil {
			return false, fmt.Errorf("sasl: credentials of %q: %w", user, err)
		}
		if ok {
			return Verify(cred, password), nil
		}
	}
	return false, nil
}

// scramSession is the server side of a SCRAM exchange (RFC 5802):
// client-first, server-first, client-final, server-final. It is floe's own
// rather than a library's for one Kafka rule: the nonce of the client's
// final message need only end with the server's combined nonce, as Apache
// Kafka's ScramSaslServer accepts it, because librdkafka sends its own
// nonce in front of it again.
type scramSession struct {
	creds Credentials
	mech  coordapi.ScramMechanism
	state int // 0: want client-first, 1: want client-final, 2: done

	user      string
	gs2Header string
	bare      string // client-first-message-bare
	first     string // server-first-message
	nonce     string // client nonce + server nonce
	cred      coordapi.ScramCredential
	valid     bool
}

// serverNonceBytes is the entropy of the server's part of the nonce.
const serverNonceBytes = 24

func (s *scramSession) Step(ctx context.Context, msg []byte) ([]byte, bool, error) {
	switch s.state {
	case 0:
		s.state = 1
		out, err := s.clientFirst(ctx, string(msg))
		if err != nil {
			s.state = 2
			return nil, true, err
		}
		return []byte(out), false, nil
	case 1:
		s.state = 2
		out, err := s.clientFinal(string(msg))
		if err != nil {
			return nil, true, err
		}
		s.valid = true
		return []byte(out), true, nil
	}
	return nil, true, fmt.Errorf("%w: %s exchange already over", ErrAuthFailed, s.mech)
}

func (s *scramSession) fail(format string, args ...any) error {
	return fmt.Errorf("%w: %s: "+format, append([]any{ErrAuthFailed, s.mech}, args...)...)
}

// clientFirst reads "gs2-header client-first-message-bare":
// "n,[a=authzid],n=user,r=nonce[,extensions]".
func (s *scramSession) clientFirst(ctx context.Context, c1 string) (string, error) {
	cb, rest, ok := strings.Cut(c1, ",")
	if !ok || (cb != "n" && cb != "y") {
		return "", s.fail("channel binding is not supported")
	}
	authz, bare, ok := strings.Cut(rest, ",")
	if !ok {
		return "", s.fail("malformed client-first message")
	}
	if authz != "" {
		a, ok := strings.CutPrefix(authz, "a=")
		if !ok {
			return "", s.fail("malformed authorization id")
		}
		authz = a
	}
	s.gs2Header = c1[:len(cb)+1+len(rest)-len(bare)]
	s.bare = bare
	var cnonce string
	for i, attr := range strings.Split(bare, ",") {
		switch {
		case i == 0 && strings.HasPrefix(attr, "n="):
			user, err := decodeSaslName(attr[2:])
			if err != nil || user == "" {
				return "", s.fail("malformed user name")
			}
			s.user = user
		case i == 1 && strings.HasPrefix(attr, "r="):
			cnonce = attr[2:]
		case i == 0 || i == 1:
			return "", s.fail("malformed client-first message")
		case strings.HasPrefix(attr, "m="):
			return "", s.fail("mandatory extensions are not supported")
		}
		// Later attributes are extensions (Kafka's tokenauth): ignored.
	}
	if cnonce == "" {
		return "", s.fail("no client nonce")
	}
	if authz != "" {
		if u, err := decodeSaslName(authz); err != nil || u != s.user {
			return "", s.fail("authorization id %q is not the user %q", authz, s.user)
		}
	}
	cred, ok, err := s.creds.UserScramCredential(ctx, s.user, s.mech)
	if err != nil {
		return "", fmt.Errorf("sasl: credentials of %q: %w", s.user, err)
	}
	if !ok {
		return "", s.fail("invalid credentials")
	}
	s.cred = cred
	sn := make([]byte, serverNonceBytes)
	rand.Read(sn)
	s.nonce = cnonce + base64.RawURLEncoding.EncodeToString(sn)
	s.first = "r=" + s.nonce + ",s=" + base64.StdEncoding.EncodeToString(cred.Salt) + ",i=" + strconv.Itoa(int(cred.Iterations))
	return s.first, nil
}

// clientFinal reads "c=base64(gs2-header),r=nonce[,extensions],p=proof"
// and answers "v=server-signature".
func (s *scramSession) clientFinal(c2 string) (string, error) {
	cut := strings.LastIndex(c2, ",p=")
	if cut < 0 {
		return "", s.fail("no proof in the client-final message")
	}
	withoutProof, proofB64 := c2[:cut], c2[cut+3:]
	attrs := strings.Split(withoutProof, ",")
	if len(attrs) < 2 || !strings.HasPrefix(attrs[0], "c=") || !strings.HasPrefix(attrs[1], "r=") {
		return "", s.fail("malformed client-final message")
	}
	cbind, err := base64.StdEncoding.DecodeString(attrs[0][2:])
	if err != nil || string(cbind) != s.gs2Header {
		return "", s.fail("channel binding does not match")
	}
	if !strings.HasSuffix(attrs[1][2:], s.nonce) {
		return "", s.fail("nonce does not match")
	}
	proof, err := base64.StdEncoding.DecodeString(proofB64)
	h := hashOf(s.mech)
	if err != nil || len(proof) != h().Size() {
		return "", s.fail("malformed proof")
	}
	authMsg := s.bare + "," + s.first + "," + withoutProof
	sig := mac(h, s.cred.StoredKey, authMsg)
	clientKey := make([]byte, len(proof))
	for i := range proof {
		clientKey[i] = proof[i] ^ sig[i]
	}
	sum := h()
	sum.Write(clientKey)
	if subtle.ConstantTimeCompare(sum.Sum(nil), s.cred.StoredKey) != 1 {
		return "", s.fail("invalid credentials")
	}
	return "v=" + base64.StdEncoding.EncodeToString(mac(h, s.cred.ServerKey, authMsg)), nil
}

func (s *scramSession) Claimed() string { return s.user }

func (s *scramSession) Username() string {
	if !s.valid {
		return ""
	}
	return s.user
}

// decodeSaslName undoes RFC 5802's saslname escapes: "=2C" is ',', "=3D"
// is '='; any other '=' is malformed.
func decodeSaslName(s string) (string, error) {
	if !strings.Contains(s, "=") {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '=' {
			b.WriteByte(s[i])
			continue
		}
		switch {
		case strings.HasPrefix(s[i:], "=2C"):
			b.WriteByte(',')
		case strings.HasPrefix(s[i:], "=3D"):
			b.WriteByte('=')
		default:
			return "", errors.New("bad saslname escape")
		}
		i += 2
	}
	return b.String(), nil
}
