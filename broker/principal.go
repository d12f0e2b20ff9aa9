package broker

import "net"

// AnonymousPrincipal is the principal of a connection that has not
// authenticated (a plaintext or TLS listener without SASL or a client
// certificate), as Apache Kafka names it.
const AnonymousPrincipal = "User:ANONYMOUS"

// principal returns the Kafka principal the connection authenticated as
// ("User:alice"): set by SASL or taken from a client certificate, else
// AnonymousPrincipal. ACLs are checked against it.
func (c *conn) principal() string {
	if p := c.authPrincipal.Load(); p != nil {
		return *p
	}
	return AnonymousPrincipal
}

// setPrincipal records the principal the connection authenticated as.
func (c *conn) setPrincipal(p string) { c.authPrincipal.Store(&p) }

// clientHost returns the client's IP address as ACLs match hosts
// ("127.0.0.1", no port).
func (c *conn) clientHost() string { return c.host }

// remoteHost returns the IP address of nc's peer, without the port.
func remoteHost(nc net.Conn) string {
	addr := nc.RemoteAddr().String()
	if host, _, err := net.SplitHostPort(addr); err == nil {
		return host
	}
	return addr
}
