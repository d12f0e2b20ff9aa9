// Package tlsconfig builds the TLS configurations floe's listeners and its
// own links use: a server config whose certificate and client CA are
// re-read from their files when they change (no restart to rotate them), a
// client config for the links to S3 and NATS, and the principal a client
// certificate stands for, mapped as Apache Kafka's
// ssl.principal.mapping.rules maps it.
package tlsconfig
