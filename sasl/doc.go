// Package sasl holds floe's server side of the SASL mechanisms Kafka
// clients authenticate with: PLAIN (RFC 4616) and SCRAM-SHA-256 and
// SCRAM-SHA-512 (RFC 5802, RFC 7677), and the SCRAM credential arithmetic
// the coordinator stores users with.
//
// A user's password is never kept. The coordinator stores, per user and
// mechanism, the salt, the iteration count, StoredKey and ServerKey:
//
//	SaltedPassword = Hi(password, salt, iterations)   PBKDF2 with HMAC-H
//	ClientKey      = HMAC(SaltedPassword, "Client Key")
//	StoredKey      = H(ClientKey)
//	ServerKey      = HMAC(SaltedPassword, "Server Key")
//
// as Apache Kafka's ScramFormatter does (the password is its UTF-8 bytes,
// not SASLprep-normalized, as in Kafka). PLAIN checks a password against
// the same stored SCRAM credentials, so a users file or an admin sets one
// password for every mechanism.
//
// The SCRAM server is floe's own (RFC 5802 is short) because of one rule
// Apache Kafka keeps: the nonce of a client's final message need only end
// with the server's combined nonce, since librdkafka sends its own nonce in
// front of it again; a strict server (xdg-go/scram's) fails every
// librdkafka client.
//
// A Session is one exchange on one connection: the broker feeds it the
// client's SaslAuthenticate bytes and answers with what it returns, until
// it is done; Username then names the authenticated user.
package sasl
