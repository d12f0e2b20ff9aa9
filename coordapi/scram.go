package coordapi

// ScramMechanism is a SCRAM mechanism as AlterUserScramCredentials and
// DescribeUserScramCredentials number it.
type ScramMechanism int8

// The SCRAM mechanisms, with Kafka's numbers.
const (
	ScramUnknown ScramMechanism = 0
	ScramSHA256  ScramMechanism = 1
	ScramSHA512  ScramMechanism = 2
)

// SCRAM iteration bounds Apache Kafka enforces on a stored credential.
const (
	ScramMinIterations = 4096
	ScramMaxIterations = 16384
)

// String returns the mechanism's SASL name ("SCRAM-SHA-256").
func (m ScramMechanism) String() string {
	switch m {
	case ScramSHA256:
		return "SCRAM-SHA-256"
	case ScramSHA512:
		return "SCRAM-SHA-512"
	}
	return "UNKNOWN"
}

// ScramMechanismNamed returns the mechanism of a SASL name, ScramUnknown
// for any other.
func ScramMechanismNamed(name string) ScramMechanism {
	switch name {
	case "SCRAM-SHA-256":
		return ScramSHA256
	case "SCRAM-SHA-512":
		return ScramSHA512
	}
	return ScramUnknown
}

// ScramCredential is what the coordinator keeps of a user's password for
// one mechanism (RFC 5802): never the password, nor the salted password.
type ScramCredential struct {
	Mechanism  ScramMechanism
	Iterations int32
	Salt       []byte
	// StoredKey is H(HMAC(SaltedPassword, "Client Key")): it checks a
	// client's proof. ServerKey is HMAC(SaltedPassword, "Server Key"): it
	// signs the server's final message.
	StoredKey []byte
	ServerKey []byte
}

// ScramUpsertion sets a user's credential for one mechanism, as
// AlterUserScramCredentials sends it: the client salts the password, the
// coordinator derives and keeps the keys.
type ScramUpsertion struct {
	User           string
	Mechanism      ScramMechanism
	Iterations     int32
	Salt           []byte
	SaltedPassword []byte
}

// ScramDeletion removes a user's credential for one mechanism.
type ScramDeletion struct {
	User      string
	Mechanism ScramMechanism
}

// ScramUserResult is the outcome of AlterUserScramCredentials for one user,
// as Kafka reports it: 0, or a Kafka error code and its message.
type ScramUserResult struct {
	User         string
	ErrorCode    int16
	ErrorMessage string
}

// ScramUserInfo describes one user's credentials (mechanisms and
// iterations only), or why it could not (ErrorCode).
type ScramUserInfo struct {
	User         string
	ErrorCode    int16
	ErrorMessage string
	Credentials  []ScramCredentialInfo
}

// ScramCredentialInfo is what DescribeUserScramCredentials shows of a
// credential.
type ScramCredentialInfo struct {
	Mechanism  ScramMechanism
	Iterations int32
}
