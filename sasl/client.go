package sasl

import (
	"strings"

	kgosasl "github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// Client returns franz-go's client side of mechanism (PLAIN,
// SCRAM-SHA-256 or SCRAM-SHA-512, any case) for user and password, for
// floe's own Kafka clients (the floe command, the load generator, tests);
// ok is false for any other name.
func Client(mechanism, user, password string) (m kgosasl.Mechanism, ok bool) {
	switch strings.ToUpper(mechanism) {
	case Plain:
		return plain.Auth{User: user, Pass: password}.AsMechanism(), true
	case ScramSHA256:
		return scram.Auth{User: user, Pass: password}.AsSha256Mechanism(), true
	case ScramSHA512:
		return scram.Auth{User: user, Pass: password}.AsSha512Mechanism(), true
	}
	return nil, false
}
