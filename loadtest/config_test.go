package loadtest

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want []string // substrings, one problem each; none: valid
	}{
		{"defaults", func(*Config) {}, nil},
		{"records without duration", func(c *Config) { c.Duration, c.Records = 0, 100 }, nil},
		{"acks 1 not idempotent", func(c *Config) { c.Acks, c.Idempotent, c.MaxInflight = "1", false, 20 }, nil},
		{"consumers only", func(c *Config) { c.Producers, c.Consumers, c.Group, c.ConsumerGroups = 0, 2, "g", 3 }, nil},
		{"kv", func(c *Config) { c.KVURL, c.KeySpace, c.KVLookupsRate = "http://127.0.0.1:8080", 10, 50 }, nil},
		{"topic configs", func(c *Config) { c.CreateTopic, c.TopicConfigs = true, map[string]string{"kv.index.enabled": "true"} }, nil},
		{"metrics", func(c *Config) { c.MetricsURLs = []string{"http://127.0.0.1:8080/metrics"} }, nil},

		{"no brokers", func(c *Config) { c.Brokers = nil }, []string{"--brokers"}},
		{"bad broker", func(c *Config) { c.Brokers = []string{"localhost"} }, []string{"--brokers"}},
		{"bad topic", func(c *Config) { c.Topic = "a/b" }, []string{"--topic"}},
		{"empty topic", func(c *Config) { c.Topic = "" }, []string{"--topic"}},
		{"create with 0 partitions", func(c *Config) { c.CreateTopic, c.Partitions = true, 0 }, []string{"--partitions"}},
		{"replication 0", func(c *Config) { c.ReplicationFactor = 0 }, []string{"--replication-factor"}},
		{"unbounded", func(c *Config) { c.Duration = 0 }, []string{"one of them must bound"}},
		{"warmup too long", func(c *Config) { c.Warmup = c.Duration }, []string{"--warmup"}},
		{"records without producers", func(c *Config) { c.Producers, c.Records, c.Consumers = 0, 5, 1 }, []string{"--records: needs --producers"}},
		{"producers only", func(c *Config) { c.Consumers = 0 }, nil},
		{"nothing to do", func(c *Config) { c.Producers, c.Consumers = 0, 0 }, []string{"nothing to do"}},
		{"negative rate", func(c *Config) { c.Rate = -1 }, []string{"--rate"}},
		{"record size", func(c *Config) { c.RecordSize = -1 }, []string{"--record-size"}},
		{"payload", func(c *Config) { c.Payload = "zeros" }, []string{"--payload"}},
		{"acks", func(c *Config) { c.Acks, c.Idempotent = "2", false }, []string{"--acks"}},
		{"compression", func(c *Config) { c.Compression = "brotli" }, []string{"--compression"}},
		{"idempotent acks 1", func(c *Config) { c.Acks = "1" }, []string{"--idempotent"}},
		{"idempotent inflight", func(c *Config) { c.MaxInflight = 10 }, []string{"--max-inflight"}},
		{"inflight 0", func(c *Config) { c.Idempotent, c.MaxInflight = false, 0 }, []string{"--max-inflight"}},
		{"groups without consumers", func(c *Config) { c.Consumers, c.ConsumerGroups = 0, 2 }, []string{"--consumer-groups"}},
		{"group without consumers", func(c *Config) { c.Consumers, c.Group = 0, "g" }, []string{"--group"}},
		{"share group", func(c *Config) { c.ShareGroup, c.ShareMaxRecords = "sg", 2000 }, nil},
		{"share group without consumers", func(c *Config) { c.Consumers, c.ShareGroup = 0, "sg" }, []string{"--share-group"}},
		{"share group and group", func(c *Config) { c.Group, c.ShareGroup = "g", "sg" }, []string{"exclude each other"}},
		{"share max records", func(c *Config) { c.ShareMaxRecords = -1 }, []string{"--share-max-records"}},
		{"kv without key space", func(c *Config) { c.KVURL = "http://127.0.0.1:8080" }, []string{"--key-space"}},
		{"kv bad url", func(c *Config) { c.KVURL, c.KeySpace = "127.0.0.1:8080", 5 }, []string{"--kv-url"}},
		{"kv rate without url", func(c *Config) { c.KVLookupsRate = 5 }, []string{"--kv-lookups-rate"}},
		{"kv concurrency", func(c *Config) { c.KVURL, c.KeySpace, c.KVConcurrency = "http://h:1", 5, 0 }, []string{"--kv-concurrency"}},
		{"metrics url", func(c *Config) { c.MetricsURLs = []string{"ftp://x"} }, []string{"--metrics-url"}},
		{"topic config without create", func(c *Config) { c.TopicConfigs = map[string]string{"cleanup.policy": "compact"} }, []string{"--topic-config"}},
		{"drain", func(c *Config) { c.DrainTimeout = 0 }, []string{"--drain-timeout"}},
		{"every problem at once", func(c *Config) {
			c.Brokers, c.Duration, c.Acks, c.Compression, c.Progress = []string{"nope"}, -time.Second, "all!", "lzma", -1
		}, []string{"--brokers", "--duration", "--acks", "--compression", "--progress"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			tc.edit(&cfg)
			err := cfg.Validate()
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			var ce *ConfigError
			if !errors.As(err, &ce) || !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("Validate() = %v, want a *ConfigError", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q: %v", w, err)
				}
			}
			if len(ce.Problems) < len(tc.want) {
				t.Errorf("%d problems, want >= %d: %q", len(ce.Problems), len(tc.want), ce.Problems)
			}
		})
	}
}
