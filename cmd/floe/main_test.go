package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/floe-io/floe/broker"
	"github.com/floe-io/floe/coordinator"
	"github.com/floe-io/floe/internal/flagenv"
	"github.com/floe-io/floe/internal/testkit/floetest"
	"github.com/floe-io/floe/node"
)

// TestMain keeps the tests from the environment's FLOE_* settings and from
// a real ~/.config/floe/profile.
func TestMain(m *testing.M) {
	for _, s := range settings {
		if s.env {
			os.Unsetenv(flagenv.Name(s.name))
		}
	}
	dir, err := os.MkdirTemp("", "floe-cli-config")
	if err != nil {
		panic(err)
	}
	os.Setenv("XDG_CONFIG_HOME", dir)
	os.Setenv("HOME", dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// result is one run of the command.
type result struct {
	stdout, stderr string
	code           int
}

// floe runs the command with args and stdin.
func floe(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	var out, errb strings.Builder
	code := run(args, strings.NewReader(stdin), &out, &errb)
	return result{out.String(), errb.String(), code}
}

// ok runs the command and fails the test unless it exits 0.
func ok(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	r := floe(t, stdin, args...)
	if r.code != 0 {
		t.Fatalf("floe %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	return r.stdout
}

// fails runs the command and fails the test unless it exits with code and
// stderr holds want.
func fails(t *testing.T, code int, want string, stdin string, args ...string) result {
	t.Helper()
	r := floe(t, stdin, args...)
	if r.code != code || !strings.Contains(r.stderr, want) {
		t.Fatalf("floe %s: exit %d, stderr %q; want exit %d with %q", strings.Join(args, " "), r.code, r.stderr, code, want)
	}
	return r
}

// decode parses JSON output into v.
func decode(t *testing.T, out string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(out), v); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out)
	}
}

// startNode starts a broker with the key index allowed.
func startNode(t *testing.T) *node.Node {
	return floetest.StartNode(t, node.Config{Coordinator: coordinator.Options{KVIndexEnabled: true}})
}

// franz returns a franz-go client of n, closed at cleanup.
func franz(t *testing.T, n *node.Node, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(n.KafkaAddr())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// TestUsage: help exits 0 on stdout, bad usage exits 2 with a message,
// without a broker.
func TestUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		out  string // in stdout (code 0) or stderr
	}{
		{[]string{"--help"}, 0, "Commands:"},
		{[]string{"-h"}, 0, "Global flags"},
		{[]string{"help"}, 0, "Commands:"},
		{[]string{"topic", "--help"}, 0, "Usage: floe topic <command>"},
		{[]string{"topic", "create", "--help"}, 0, "--partitions"},
		{[]string{"group", "reset-offsets", "-h"}, 0, "--to-earliest"},
		{[]string{"consume", "--help"}, 0, "%h headers"},
		{[]string{"kv", "get", "--help"}, 0, "--base64"},
		{[]string{"acl", "create", "--help"}, 0, "--resource-type"},
		{[]string{"user", "create", "--help"}, 0, "--iterations"},
		{[]string{"cluster", "info", "--help"}, 0, "--api-versions"},
		{nil, 2, "Commands:"},
		{[]string{"topic"}, 2, "Commands:"},
		{[]string{"bogus"}, 2, `unknown command "bogus"`},
		{[]string{"topic", "bogus"}, 2, `floe topic: unknown command "bogus"`},
		{[]string{"topic", "create"}, 2, "name at least one topic"},
		{[]string{"topic", "create", "t", "--partitions", "x"}, 2, "invalid value"},
		{[]string{"topic", "create", "t", "--config", "novalue"}, 2, "not key=value"},
		{[]string{"topic", "create", "t", "--no-such-flag"}, 2, "flag provided but not defined"},
		{[]string{"topic", "alter", "t"}, 2, "nothing to change"},
		{[]string{"group", "list", "web"}, 2, `unexpected argument "web"`},
		{[]string{"group", "reset-offsets", "g", "--topic", "t"}, 2, "give one of --to-earliest"},
		{[]string{"group", "reset-offsets", "g", "--to-latest"}, 2, "give --topic or --all-topics"},
		{[]string{"group", "reset-offsets", "g", "--topic", "t", "--to-latest", "--dry-run", "--execute"}, 2, "do not go together"},
		{[]string{"group", "reset-offsets", "g", "--topic", "t", "--to-datetime", "yesterday"}, 2, "want RFC 3339"},
		{[]string{"kv", "get", "t"}, 2, "give TOPIC and KEY"},
		{[]string{"kv", "get", "t", "!!", "--base64"}, 2, "not base64url"},
		{[]string{"consume", "t", "--format", "%x"}, 2, "unknown %x"},
		{[]string{"consume", "t", "--group", "g", "--partition", "0"}, 2, "do not go together"},
		{[]string{"acl", "create", "--resource-type", "topic", "--resource-name", "t", "--operation", "read", "--allow"}, 2, "give --principal"},
		{[]string{"acl", "create", "--resource-type", "topic", "--resource-name", "t", "--operation", "read", "--principal", "bob"}, 2, "give one of --allow and --deny"},
		{[]string{"acl", "create", "--resource-type", "table", "--resource-name", "t"}, 2, "--resource-type"},
		{[]string{"acl", "list", "--operation", "sing"}, 2, "not an operation"},
		{[]string{"acl", "delete"}, 2, "give --resource-type"},
		{[]string{"user", "create", "bob", "--mechanism", "MD5", "--password", "x"}, 2, "want SCRAM-SHA-256"},
		{[]string{"user", "create", "bob", "--iterations", "10", "--password", "x"}, 2, "between 4096 and 16384"},
		{[]string{"topic", "list", "--sasl-mechanism", "GSSAPI", "--sasl-user", "u"}, 2, "is not PLAIN"},
		{[]string{"topic", "list", "--sasl-mechanism", "PLAIN"}, 2, "needs sasl-user"},
		{[]string{"topic", "list", "--tls-cert", "c.pem"}, 2, "tls-cert and tls-key go together"},
		{[]string{"topic", "list", "--timeout", "soon"}, 2, "not a positive duration"},
		{[]string{"topic", "list", "--profile", "/nonexistent/profile"}, 2, "no such file"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			r := floe(t, "", tc.args...)
			got := r.stderr
			if tc.code == 0 {
				got = r.stdout
			}
			if r.code != tc.code || !strings.Contains(got, tc.out) {
				t.Fatalf("exit %d, stdout %q, stderr %q; want exit %d with %q", r.code, r.stdout, r.stderr, tc.code, tc.out)
			}
			if tc.code == 2 && !strings.Contains(r.stderr, "Run 'floe") && !strings.Contains(r.stderr, "Commands:") {
				t.Fatalf("bad usage without a pointer to --help: %q", r.stderr)
			}
		})
	}
}

// TestProfile: settings come from flags, then the environment, then the
// profile file, then the defaults.
func TestProfile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "profile")
	os.WriteFile(p, []byte(`# a profile
brokers = from-profile:9092
sasl-mechanism: SCRAM-SHA-512
sasl-user: "admin"
sasl-password = 's3cret'
timeout = 5s
`), 0o600)
	for _, tc := range []struct {
		name    string
		args    []string
		env     map[string]string
		brokers string
		timeout string
	}{
		{"profile", []string{"--profile", p}, nil, "from-profile:9092", "5s"},
		{"env over profile", []string{"--profile", p}, map[string]string{"FLOE_BROKERS": "from-env:9092"}, "from-env:9092", "5s"},
		{"flag over env", []string{"--profile", p, "--brokers", "a:1,b:2"}, map[string]string{"FLOE_BROKERS": "from-env:9092"}, "a:1,b:2", "5s"},
		{"profile from env", nil, map[string]string{"FLOE_PROFILE": p}, "from-profile:9092", "5s"},
		{"defaults", nil, nil, "127.0.0.1:9092", "30s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newGlobals()
			g.lookupEnv = func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok }
			c := &cli{g: g, path: "floe"}
			f := c.flags("", "")
			if _, err := f.parse(tc.args); err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(g.brokers, ","); got != tc.brokers {
				t.Errorf("brokers %q, want %q", got, tc.brokers)
			}
			if g.timeout.String() != tc.timeout {
				t.Errorf("timeout %v, want %s", g.timeout, tc.timeout)
			}
			if tc.brokers == "from-profile:9092" && (g.saslMechanism != "SCRAM-SHA-512" || g.saslUser != "admin" || g.saslPassword != "s3cret") {
				t.Errorf("sasl from the profile: %q %q %q", g.saslMechanism, g.saslUser, g.saslPassword)
			}
		})
	}
	bad := filepath.Join(dir, "bad")
	os.WriteFile(bad, []byte("brokers = x\ncolour = blue\n"), 0o600)
	fails(t, 2, `bad:2: unknown setting "colour"`, "", "topic", "list", "--profile", bad)
}

// TestFormat: consume --format's directives and escapes.
func TestFormat(t *testing.T) {
	r := &kgo.Record{Topic: "t", Partition: 2, Offset: 41, Key: []byte("k"), Value: []byte("v"),
		Headers: []kgo.RecordHeader{{Key: "a", Value: []byte("1")}, {Key: "b", Value: []byte("2")}}}
	for _, tc := range []struct{ format, want string }{
		{`%v\n`, "v\n"},
		{`%t/%p@%o %k=%s [%h]`, "t/2@41 k=v [a=1,b=2]"},
		{`%K %S\t100%%\\`, "1 1\t100%\\"},
		{`plain`, "plain"},
	} {
		fn, err := parseFormat(tc.format)
		if err != nil {
			t.Fatalf("%q: %v", tc.format, err)
		}
		var sb strings.Builder
		w := bufio.NewWriter(&sb)
		fn(w, r)
		w.Flush()
		if sb.String() != tc.want {
			t.Errorf("%q: %q, want %q", tc.format, sb.String(), tc.want)
		}
	}
	for _, bad := range []string{"%", "%q", "x%"} {
		if _, err := parseFormat(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// TestClusterInfo: the cluster's id, broker and ApiVersions, as a table
// and as JSON.
func TestClusterInfo(t *testing.T) {
	n := floetest.StartNode(t, node.Config{Broker: broker.Options{Rack: "zone-a"}, ZoneCacheSharingDisabled: true})
	b := "--brokers=" + n.KafkaAddr()
	out := ok(t, "", "cluster", "info", b)
	for _, want := range []string{"CLUSTER-ID", "floe", "BROKERS", strings.Split(n.KafkaAddr(), ":")[1], "zone-a"} {
		if !strings.Contains(out, want) {
			t.Fatalf("cluster info lacks %q:\n%s", want, out)
		}
	}
	var cd clusterDescription
	decode(t, ok(t, "", "--json", b, "cluster", "info", "--api-versions"), &cd)
	if cd.ClusterID != "floe" || len(cd.Brokers) != 1 || cd.Brokers[0].NodeID != cd.Controller || *cd.Brokers[0].Rack != "zone-a" {
		t.Fatalf("cluster info --json: %+v", cd)
	}
	names := map[string]bool{}
	for _, v := range cd.APIVersions {
		names[v.Name] = true
	}
	for _, want := range []string{"Produce", "Fetch", "CreatePartitions", "DescribeUserSCRAMCredentials"} {
		if !names[want] {
			t.Errorf("ApiVersions lacks %s: %v", want, names)
		}
	}
	// A broker that is not there: exit 1 and a hint.
	fails(t, 1, "is a broker running there", "", "cluster", "info", "--brokers", "127.0.0.1:1", "--timeout", "3s")
}
