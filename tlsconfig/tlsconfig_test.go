package tlsconfig

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"testing"
	"time"

	"github.com/floe-io/floe/internal/testkit/certtest"
)

func TestRules(t *testing.T) {
	for _, tc := range []struct {
		rules, subject, want string
	}{
		{"", "CN=alice,O=floe", "CN=alice,O=floe"},
		{"DEFAULT", "CN=alice,O=floe", "CN=alice,O=floe"},
		{"RULE:^CN=(.*?),O=(.*)$/$1@$2/", "CN=alice,O=floe", "alice@floe"},
		{"RULE:^CN=(.*?),.*$/$1/U", "CN=alice,O=floe", "ALICE"},
		{"RULE:^CN=(.*?),.*$/$1/L,DEFAULT", "CN=Bob,OU=x", "bob"},
		{"RULE:^OU=(.*)$/$1/, DEFAULT", "CN=Bob,OU=x", "CN=Bob,OU=x"},
		{`RULE:^CN=([^,]*).*$/svc\/$1/`, "CN=web,O=floe", "svc/web"},
		{"RULE:^CN=(.*)$/$1x/", "CN=web", "webx"},
	} {
		rs, err := ParseRules(tc.rules)
		if err != nil {
			t.Fatalf("%q: %v", tc.rules, err)
		}
		if got := rs.Name(tc.subject); got != tc.want {
			t.Errorf("%q on %q: %q, want %q", tc.rules, tc.subject, got, tc.want)
		}
	}
	for _, bad := range []string{"RULE:abc", "RULE:a/b", "NOPE", "DEFAULT DEFAULT", "RULE:(/x/"} {
		if _, err := ParseRules(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

// handshake dials ln with cfg and returns the server certificate's serial
// and the handshake error.
func handshake(t *testing.T, addr string, cfg *tls.Config) (*x509.Certificate, error) {
	t.Helper()
	c, err := tls.Dial("tcp", addr, cfg)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	// TLS 1.3 reports a refused client certificate on the first read.
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err != nil && !isTimeoutOrEOF(err) {
		return nil, err
	}
	return c.ConnectionState().PeerCertificates[0], nil
}

func isTimeoutOrEOF(err error) bool {
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		return true
	}
	return err.Error() == "EOF"
}

func TestServerReloadAndClientAuth(t *testing.T) {
	dir := t.TempDir()
	ca := certtest.NewCA(t, dir, "test")
	srv := ca.Server("server")
	files := ServerFiles{CertFile: srv.CertFile, KeyFile: srv.KeyFile, ClientCAFile: ca.File}
	s, err := NewServer(files, nil)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", s.Config())
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				if tc, ok := c.(*tls.Conn); ok {
					tc.Handshake()
					c.Write([]byte("x"))
				}
			}()
		}
	}()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.PEM)
	client := ca.Client("alice", "alice")
	pair, err := tls.LoadX509KeyPair(client.CertFile, client.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	withCert := &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}}
	first, err := handshake(t, ln.Addr().String(), withCert)
	if err != nil {
		t.Fatalf("mTLS handshake: %v", err)
	}
	if _, err := handshake(t, ln.Addr().String(), &tls.Config{RootCAs: pool}); err == nil {
		t.Fatal("a client without a certificate was let in")
	}

	// Rotate the server certificate in place: the next handshake sees it
	// (files checked at every handshake here, at most once a second in
	// production).
	s.mu.Lock()
	s.every = 0
	s.mu.Unlock()
	next := ca.Server("server-next")
	for _, mv := range [][2]string{{next.CertFile, srv.CertFile}, {next.KeyFile, srv.KeyFile}} {
		data, err := os.ReadFile(mv[0])
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(mv[1], data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	got, err := handshake(t, ln.Addr().String(), withCert)
	if err != nil {
		t.Fatal(err)
	}
	if got.SerialNumber.Cmp(first.SerialNumber) == 0 {
		t.Fatal("the rotated certificate was not served")
	}
	if s.Reloads() != 1 {
		t.Fatalf("%d reloads, want 1", s.Reloads())
	}
}
