package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/floe-io/floe/broker"
	"github.com/floe-io/floe/coordinator"
	"github.com/floe-io/floe/internal/testkit/certtest"
	"github.com/floe-io/floe/internal/testkit/floetest"
	"github.com/floe-io/floe/node"
	"github.com/floe-io/floe/tlsconfig"
)

// TestSecurity: against a broker with TLS, SASL (every mechanism) and
// ACLs, with the settings in a profile file: user create/list/delete
// (SCRAM), acl create/list/delete and their effect on another user,
// produce and consume as that user, kv get over HTTPS with HTTP Basic, and
// Kafka's errors by name.
func TestSecurity(t *testing.T) {
	dir := t.TempDir()
	ca := certtest.NewCA(t, dir, "floe")
	srv := ca.Server("server")
	users := filepath.Join(dir, "users")
	os.WriteFile(users, []byte("admin:admin-secret\n"), 0o600)
	n := floetest.StartNode(t, node.Config{
		SASLUsersFile: users,
		TLS:           node.TLSConfig{Files: tlsconfig.ServerFiles{CertFile: srv.CertFile, KeyFile: srv.KeyFile}},
		Broker: broker.Options{SASLMechanisms: []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"},
			ACLsEnabled: true, SuperUsers: []string{"User:admin"}},
		Coordinator: coordinator.Options{KVIndexEnabled: true},
	})
	profile := filepath.Join(dir, "profile")
	os.WriteFile(profile, []byte("brokers = "+n.KafkaAddr()+"\nhttp = "+n.HTTPAddr()+"\ntls-ca = "+ca.File+
		"\nsasl-mechanism = SCRAM-SHA-512\nsasl-user = admin\nsasl-password = admin-secret\n"), 0o600)
	admin := func(args ...string) []string { return append(args, "--profile", profile) }
	// bob is the profile with his own credentials (flags override it).
	bob := func(args ...string) []string {
		return append(args, "--profile", profile, "--sasl-mechanism", "SCRAM-SHA-256", "--sasl-user", "bob", "--sasl-password", "bob-secret")
	}

	out := ok(t, "", admin("cluster", "info")...)
	if !strings.Contains(out, "CLUSTER-ID") {
		t.Fatalf("cluster info over SASL_SSL:\n%s", out)
	}
	fails(t, 1, "SASL_AUTHENTICATION_FAILED", "", admin("cluster", "info", "--sasl-password", "wrong", "--timeout", "10s")...)

	// Users.
	ok(t, "", admin("user", "create", "bob", "--mechanism", "SCRAM-SHA-256", "--password", "bob-secret")...)
	ok(t, "carol-secret\n", admin("user", "create", "carol", "--mechanism", "SCRAM-SHA-512", "--iterations", "8192")...)
	out = ok(t, "", admin("user", "list")...)
	for _, want := range []string{"admin", "bob    SCRAM-SHA-256  4096", "carol  SCRAM-SHA-512  8192"} {
		if !strings.Contains(out, want) {
			t.Fatalf("user list lacks %q:\n%s", want, out)
		}
	}
	var listed []userEntry
	decode(t, ok(t, "", admin("user", "list", "bob", "--json")...), &listed)
	if len(listed) != 1 || listed[0].User != "bob" || len(listed[0].Mechanisms) != 1 || listed[0].Mechanisms[0].Mechanism != "SCRAM-SHA-256" {
		t.Fatalf("user list bob --json: %+v", listed)
	}
	ok(t, "", bob("cluster", "info")...) // bob can log in

	// bob may do nothing until an ACL lets him.
	ok(t, "", admin("topic", "create", "secret", "--config", "cleanup.policy=compact", "--config", "kv.index.enabled=true")...)
	fails(t, 1, "TOPIC_AUTHORIZATION_FAILED", "k=v\n", bob("produce", "secret", "--key-separator", "=")...)
	fails(t, 1, "CLUSTER_AUTHORIZATION_FAILED", "", bob("acl", "list")...)
	fails(t, 1, "40301", "", bob("kv", "get", "secret", "k")...)
	out = ok(t, "", admin("acl", "create", "--principal", "bob", "--operation", "write", "--operation", "read", "--operation", "describe",
		"--resource-type", "topic", "--resource-name", "secret", "--allow")...)
	if strings.Count(out, "User:bob") != 3 {
		t.Fatalf("acl create:\n%s", out)
	}
	ok(t, "", admin("acl", "create", "--principal", "User:carol", "--operation", "read", "--resource-type", "group",
		"--resource-name", "team-", "--pattern-type", "prefixed", "--deny", "--host", "10.0.0.1")...)

	var acls []aclEntry
	decode(t, ok(t, "", admin("acl", "list", "--json")...), &acls)
	if len(acls) != 4 {
		t.Fatalf("acl list: %+v", acls)
	}
	want := aclEntry{Principal: "User:carol", Host: "10.0.0.1", ResourceType: "GROUP", ResourceName: "team-", PatternType: "PREFIXED", Operation: "READ", Permission: "DENY"}
	if acls[0] != want {
		t.Fatalf("acl list: first %+v, want %+v", acls[0], want)
	}
	out = ok(t, "", admin("acl", "list", "--principal", "bob", "--operation", "write")...)
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 2 || strings.Join(strings.Fields(lines[1]), " ") != "User:bob * TOPIC secret LITERAL WRITE ALLOW" {
		t.Fatalf("acl list --principal bob --operation write:\n%s", out)
	}

	// Now bob can write, read and look keys up (HTTPS, HTTP Basic).
	ok(t, "k=v1\nk=v2\n", bob("produce", "secret", "--key-separator", "=")...)
	if out = ok(t, "", bob("consume", "secret", "-e", "--format", `%k:%v,`)...); out != "k:v1,k:v2," {
		t.Fatalf("consume as bob: %q", out)
	}
	if out = ok(t, "", bob("kv", "get", "secret", "k")...); out != "v2\n" {
		t.Fatalf("kv get as bob: %q", out)
	}
	fails(t, 1, "401 Unauthorized: 40101", "", "kv", "get", "secret", "k", "--http", n.HTTPAddr(), "--tls-ca", ca.File)

	// Deleting the WRITE ACL takes writing away again.
	out = ok(t, "", admin("acl", "delete", "--resource-type", "topic", "--resource-name", "secret", "--principal", "bob", "--operation", "write")...)
	if strings.Count(out, "User:bob") != 1 || !strings.Contains(out, "WRITE") {
		t.Fatalf("acl delete:\n%s", out)
	}
	// (An idempotent producer with WRITE on no topic is refused at
	// InitProducerId: CLUSTER_AUTHORIZATION_FAILED, as in Kafka.)
	fails(t, 1, "_AUTHORIZATION_FAILED", "k=v3\n", bob("produce", "secret", "--key-separator", "=")...)
	decode(t, ok(t, "", admin("acl", "delete", "--resource-type", "any", "--json")...), &acls)
	if len(acls) != 3 {
		t.Fatalf("acl delete --resource-type any: %+v", acls)
	}
	if out = ok(t, "", admin("acl", "list")...); strings.Count(out, "\n") != 1 {
		t.Fatalf("acls left:\n%s", out)
	}

	// Deleting bob's credential ends his logins.
	ok(t, "", admin("user", "delete", "bob", "--mechanism", "SCRAM-SHA-256")...)
	if out = ok(t, "", admin("user", "list")...); strings.Contains(out, "bob") {
		t.Fatalf("bob still listed:\n%s", out)
	}
	fails(t, 1, "SASL_AUTHENTICATION_FAILED", "", bob("cluster", "info", "--timeout", "10s")...)
}

// TestMutualTLS: --tls-cert and --tls-key present a client certificate to
// a broker that requires one.
func TestMutualTLS(t *testing.T) {
	dir := t.TempDir()
	ca := certtest.NewCA(t, dir, "floe")
	srv, alice := ca.Server("server"), ca.Client("alice", "alice")
	n := floetest.StartNode(t, node.Config{
		TLS: node.TLSConfig{Files: tlsconfig.ServerFiles{CertFile: srv.CertFile, KeyFile: srv.KeyFile, ClientCAFile: ca.File}},
	})
	b := "--brokers=" + n.KafkaAddr()
	out := ok(t, "", "cluster", "info", b, "--tls-ca", ca.File, "--tls-cert", alice.CertFile, "--tls-key", alice.KeyFile)
	if !strings.Contains(out, "CLUSTER-ID") {
		t.Fatalf("cluster info over mutual TLS:\n%s", out)
	}
	// Without a certificate, or without trusting the broker's, it fails.
	r := floe(t, "", "cluster", "info", b, "--tls-ca", ca.File, "--timeout", "3s")
	if r.code != 1 {
		t.Fatalf("no client certificate: %+v", r)
	}
	fails(t, 1, "certificate", "", "cluster", "info", b, "--tls", "--timeout", "3s")
	ok(t, "", "cluster", "info", b, "--tls-insecure-skip-verify", "--tls-cert", alice.CertFile, "--tls-key", alice.KeyFile)
}
