package sasl

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"fmt"
	"hash"

	"github.com/floe-io/floe/coordapi"
)

// DefaultIterations is the iteration count floe salts passwords it is given
// in clear (the users file) with: Kafka's minimum, and kafka-configs.sh's
// default.
const DefaultIterations = 4096

// saltBytes is the length of the salts floe draws.
const saltBytes = 32

// hashOf returns the hash function of a SCRAM mechanism, nil for none.
func hashOf(m coordapi.ScramMechanism) func() hash.Hash {
	switch m {
	case coordapi.ScramSHA256:
		return sha256.New
	case coordapi.ScramSHA512:
		return sha512.New
	}
	return nil
}

// SaltPassword computes RFC 5802's SaltedPassword, Hi(password, salt, i).
func SaltPassword(m coordapi.ScramMechanism, password string, salt []byte, iterations int) ([]byte, error) {
	h := hashOf(m)
	if h == nil {
		return nil, fmt.Errorf("sasl: unknown SCRAM mechanism %d", m)
	}
	return pbkdf2.Key(h, password, salt, iterations, h().Size())
}

// Derive returns the credential to store for a salted password: what
// AlterUserScramCredentials carries is turned into this by the coordinator.
func Derive(m coordapi.ScramMechanism, saltedPassword, salt []byte, iterations int32) (coordapi.ScramCredential, error) {
	h := hashOf(m)
	if h == nil {
		return coordapi.ScramCredential{}, fmt.Errorf("sasl: unknown SCRAM mechanism %d", m)
	}
	if len(saltedPassword) != h().Size() {
		return coordapi.ScramCredential{}, fmt.Errorf("sasl: a %s salted password is %d bytes, not %d", m, h().Size(), len(saltedPassword))
	}
	clientKey := mac(h, saltedPassword, "Client Key")
	sum := h()
	sum.Write(clientKey)
	return coordapi.ScramCredential{
		Mechanism:  m,
		Iterations: iterations,
		Salt:       append([]byte(nil), salt...),
		StoredKey:  sum.Sum(nil),
		ServerKey:  mac(h, saltedPassword, "Server Key"),
	}, nil
}

// NewUpsertion salts password with a fresh random salt: the upsertion a
// client of AlterUserScramCredentials would send.
func NewUpsertion(user string, m coordapi.ScramMechanism, password string, iterations int) (coordapi.ScramUpsertion, error) {
	salt := make([]byte, saltBytes)
	rand.Read(salt)
	sp, err := SaltPassword(m, password, salt, iterations)
	if err != nil {
		return coordapi.ScramUpsertion{}, err
	}
	return coordapi.ScramUpsertion{User: user, Mechanism: m, Iterations: int32(iterations), Salt: salt, SaltedPassword: sp}, nil
}

// Verify reports whether password is the one cred was derived from. It
// costs the credential's iterations of HMAC.
func Verify(cred coordapi.ScramCredential, password string) bool {
	h := hashOf(cred.Mechanism)
	if h == nil || cred.Iterations <= 0 {
		return false
	}
	sp, err := SaltPassword(cred.Mechanism, password, cred.Salt, int(cred.Iterations))
	if err != nil {
		return false
	}
	got, err := Derive(cred.Mechanism, sp, cred.Salt, cred.Iterations)
	if err != nil {
		return false
	}
	return subtle.ConstantTimeCompare(got.StoredKey, cred.StoredKey) == 1
}

func mac(h func() hash.Hash, key []byte, msg string) []byte {
	m := hmac.New(h, key)
	m.Write([]byte(msg))
	return m.Sum(nil)
}
