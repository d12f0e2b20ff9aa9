package main

import (
	"errors"
	"flag"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/floe-io/floe/internal/docgen"
)

func TestParseFlags(t *testing.T) {
	cfg, err := parseFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.coord.Dir != "./data-coordinator" || cfg.natsURL != "nats://127.0.0.1:4222" || cfg.cluster != "floe" ||
		cfg.coord.GCGrace != 10*time.Minute || cfg.coord.BrokerTTL != 6*time.Second || cfg.coord.DefaultPartitions != 1 ||
		cfg.coord.KVIndexEnabled || cfg.httpAddr != "127.0.0.1:8090" || cfg.groups.Dir != "data-coordinator/groups" ||
		cfg.groups.MinSessionTimeout != 6*time.Second || cfg.groups.MaxSessionTimeout != 30*time.Minute {
		t.Fatalf("defaults: %+v", cfg)
	}
	if cfg.ha.Replicas != 1 || cfg.ha.LeaseTTL != 5*time.Second || cfg.ha.SnapshotInterval != 10*time.Minute ||
		cfg.ha.SnapshotsKept != 2 || !strings.HasSuffix(cfg.ha.ID, ":"+mustAbs(t, "./data-coordinator")) {
		t.Fatalf("ha defaults: %+v", cfg.ha)
	}

	t.Setenv("FLOE_GC_GRACE", "1h")
	cfg, err = parseFlags([]string{"--kv-index-enabled", "--cluster", "prod", "--num-partitions", "6"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.coord.GCGrace != time.Hour || !cfg.coord.KVIndexEnabled || cfg.cluster != "prod" || cfg.coord.DefaultPartitions != 6 {
		t.Fatalf("flags: %+v", cfg)
	}

	// Every bad flag is reported at once.
	_, err = parseFlags([]string{"--cluster", "a.b", "--nats-url", "", "--gc-grace", "-1s", "--replicas", "7", "--lease-ttl", "10ms"})
	for _, want := range []string{"--cluster", "--nats-url", "--gc-grace", "--replicas", "--lease-ttl"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not mention %s", err, want)
		}
	}
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	abs, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// TestConfigurationDoc checks docs/configuration.md's table of the
// coordinator's flags against newFlagSet.
func TestConfigurationDoc(t *testing.T) {
	fs, _ := newFlagSet()
	docgen.Check(t, "../../docs/configuration.md", "coordinator-flags", docgen.FlagTable(fs))
}

func TestParseFlagsRefuses(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want error  // errors.Is; nil: see msg
		msg  string // in the error
	}{
		{[]string{"--help"}, flag.ErrHelp, ""},
		{[]string{"--s3-path-style", "true"}, nil, "--s3-path-style=true"},
		{[]string{"--cluster", "c", "stray"}, nil, `unexpected argument "stray"`},
		{[]string{"--s3-endpoint", "http://127.0.0.1:9000"}, nil, "--s3-endpoint without --s3-bucket"},
		{[]string{"--group-min-session-timeout", "1h", "--group-max-session-timeout", "1m"}, nil, "--group-min-session-timeout 1h0m0s exceeds --group-max-session-timeout"},
	} {
		_, err := parseFlags(tc.args)
		if tc.want != nil && !errors.Is(err, tc.want) || tc.want == nil && (err == nil || !strings.Contains(err.Error(), tc.msg)) {
			t.Errorf("%q: %v, want %v %q", tc.args, err, tc.want, tc.msg)
		}
	}
}
