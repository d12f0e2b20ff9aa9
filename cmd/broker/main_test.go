package main

import (
	"errors"
	"flag"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/floe-io/floe/internal/docgen"
)

// TestMain runs main itself when FLOE_TEST_MAIN is set, with the
// arguments in FLOE_TEST_ARGS (split on spaces), so that a test can check
// its exit status and output.
func TestMain(m *testing.M) {
	if os.Getenv("FLOE_TEST_MAIN") == "1" {
		os.Args = append([]string{"broker"}, strings.Fields(os.Getenv("FLOE_TEST_ARGS"))...)
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestConfigurationDoc checks docs/configuration.md's table of the
// broker's flags against newFlagSet.
func TestConfigurationDoc(t *testing.T) {
	fs, _ := newFlagSet()
	docgen.Check(t, "../../docs/configuration.md", "broker-flags", docgen.FlagTable(fs))
}

func TestParseFlags(t *testing.T) {
	f, err := parseFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	if f.cfg.DataDir != "./data" || f.cfg.KafkaAddr != "127.0.0.1:9092" || f.cfg.HTTPAddr != "127.0.0.1:8080" ||
		f.cfg.Broker.NodeID != 1 || f.cfg.Coordinator.DefaultPartitions != 1 || !f.cfg.Broker.AutoCreateTopics {
		t.Fatalf("defaults: %+v", f.cfg)
	}
	for _, tc := range []struct {
		name string
		args []string
		want []string // in the error; none: no error
	}{
		{"ok", []string{"--s3-path-style", "--node-id", "2", "--s3-bucket", "b"}, nil},
		{"bool flag given a value", []string{"--s3-path-style", "true", "--s3-bucket", "b"},
			[]string{`"true"`, "--s3-path-style=true", "boolean flags"}},
		{"stray argument", []string{"--node-id", "2", "extra"}, []string{`"extra"`, "--flag=false"}},
		{"endpoint without bucket", []string{"--s3-endpoint", "http://127.0.0.1:9000"}, []string{"--s3-endpoint without --s3-bucket"}},
		{"all interfaces, nothing advertised", []string{"--kafka-addr", "0.0.0.0:9092"},
			[]string{"--kafka-addr 0.0.0.0:9092", "meta-address", "--advertised-addr"}},
		{"no host, nothing advertised", []string{"--kafka-addr", ":9092"}, []string{"meta-address", "--advertised-addr"}},
		{"IPv6 any, nothing advertised", []string{"--kafka-addr", "[::]:9092"}, []string{"meta-address"}},
		{"all interfaces, advertised", []string{"--kafka-addr", "0.0.0.0:9092", "--advertised-addr", "broker-1:9092"}, nil},
		{"meta-address advertised", []string{"--advertised-addr", "0.0.0.0:9092"}, []string{"--advertised-addr 0.0.0.0:9092", "meta-address"}},
		{"bad coordinator options, by flag", []string{"--num-partitions", "-5", "--gc-grace", "-1s", "--wal-retention-bytes", "-5"},
			[]string{"--num-partitions", "--gc-grace", "--wal-retention-bytes"}},
		{"coordinator options unused with --nats-url", []string{"--gc-grace", "-1s", "--nats-url", "nats://127.0.0.1:4222"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseFlags(tc.args)
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			for _, w := range tc.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("error %v does not say %s", err, w)
				}
			}
		})
	}
	if _, err := parseFlags([]string{"--help"}); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("--help: %v, want flag.ErrHelp", err)
	}
}

// TestHelp checks that --help prints the usage and exits 0, and that a
// bad flag still exits 1.
func TestHelp(t *testing.T) {
	for _, tc := range []struct {
		args string
		code int
		want string
	}{
		{"--help", 0, "-kafka-addr"},
		{"-h", 0, "-kafka-addr"},
		{"--no-such-flag", 1, "flag provided but not defined"},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "FLOE_TEST_MAIN=1", "FLOE_TEST_ARGS="+tc.args)
		out, err := cmd.CombinedOutput()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != tc.code || !strings.Contains(string(out), tc.want) || strings.Contains(string(out), "help requested") {
			t.Errorf("broker %s: exit %d, want %d; output:\n%s", tc.args, code, tc.code, out)
		}
	}
}
