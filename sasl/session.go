package sasl

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/xdg-go/scram"

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
	creds Credentials
	user  string
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

// scramSession is a SCRAM exchange served by xdg-go/scram's server
// conversation: client-first, server-first, client-final, server-final.
type scramSession struct {
	creds Credentials
	mech  coordapi.ScramMechanism
	conv  *scram.ServerConversation
	// lookupErr is a credential read that failed for a reason other than
	// an unknown user: the exchange then fails without blaming the client.
	lookupErr error
}

func (s *scramSession) Step(ctx context.Context, msg []byte) ([]byte, bool, error) {
	if s.conv == nil {
		gen := scram.SHA256
		if s.mech == coordapi.ScramSHA512 {
			gen = scram.SHA512
		}
		srv, err := gen.NewServer(func(user string) (scram.StoredCredentials, error) {
			cred, ok, err := s.creds.UserScramCredential(ctx, user, s.mech)
			if err != nil {
				s.lookupErr = err
				return scram.StoredCredentials{}, err
			}
			if !ok {
				return scram.StoredCredentials{}, errors.New("unknown user")
			}
			return scram.StoredCredentials{
				KeyFactors: scram.KeyFactors{Salt: string(cred.Salt), Iters: int(cred.Iterations)},
				StoredKey:  cred.StoredKey,
				ServerKey:  cred.ServerKey,
			}, nil
		})
		if err != nil {
			return nil, true, fmt.Errorf("sasl: %s server: %w", s.mech, err)
		}
		s.conv = srv.NewConversation()
	}
	if s.conv.Done() {
		return nil, true, fmt.Errorf("%w: %s exchange already over", ErrAuthFailed, s.mech)
	}
	resp, err := s.conv.Step(string(msg))
	if s.lookupErr != nil {
		return nil, true, fmt.Errorf("sasl: credentials: %w", s.lookupErr)
	}
	if err != nil {
		return nil, true, fmt.Errorf("%w: %s: invalid credentials (%v)", ErrAuthFailed, s.mech, err)
	}
	if !s.conv.Done() {
		return []byte(resp), false, nil
	}
	if !s.conv.Valid() {
		return nil, true, fmt.Errorf("%w: %s: invalid credentials", ErrAuthFailed, s.mech)
	}
	if authz := s.conv.AuthzID(); authz != "" && authz != s.conv.Username() {
		return nil, true, fmt.Errorf("%w: authorization id %q is not the user %q", ErrAuthFailed, authz, s.conv.Username())
	}
	return []byte(resp), true, nil
}

func (s *scramSession) Username() string {
	if s.conv == nil || !s.conv.Valid() {
		return ""
	}
	return s.conv.Username()
}
