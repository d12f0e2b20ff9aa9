package main

import (
	"strings"
	"testing"
)

// TestTopics: create with partitions and configs, list, describe, alter
// configs and partitions, delete, as tables and as JSON, and Kafka errors
// by name with exit 1.
func TestTopics(t *testing.T) {
	n := startNode(t)
	b := "--brokers=" + n.KafkaAddr()

	out := ok(t, "", "topic", "create", "orders", "--partitions", "3", "--config", "retention.ms=3600000", "--config", "cleanup.policy=compact", b)
	if !strings.Contains(out, "orders") || !strings.Contains(out, "created") {
		t.Fatalf("topic create:\n%s", out)
	}
	fails(t, 1, "TOPIC_ALREADY_EXISTS", "", "topic", "create", "orders", b)
	fails(t, 1, "INVALID_CONFIG", "", "topic", "create", "bad", "--config", "retention.ms=soon", b)
	ok(t, "", "topic", "create", "audit", b, "--dry-run")
	var created []topicResult
	decode(t, ok(t, "", "topic", "create", "payments", b, "--json"), &created)
	if len(created) != 1 || created[0].Topic != "payments" || created[0].ID == "" || created[0].Error != "" {
		t.Fatalf("topic create --json: %+v", created)
	}

	out = ok(t, "", "topic", "list", b)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "TOPIC") || !strings.HasPrefix(lines[1], "orders ") || !strings.HasPrefix(lines[2], "payments ") {
		t.Fatalf("topic list (no audit: that was a dry run):\n%s", out)
	}
	if f := strings.Fields(lines[1]); f[1] != "3" {
		t.Fatalf("orders has %s partitions:\n%s", f[1], out)
	}
	var listed []topicSummary
	decode(t, ok(t, "", "--json", b, "topic", "list"), &listed) // global flags may come first
	if len(listed) != 2 || listed[0].Topic != "orders" || listed[0].Partitions != 3 {
		t.Fatalf("topic list --json: %+v", listed)
	}

	describe := func() topicDescription {
		t.Helper()
		var d []topicDescription
		decode(t, ok(t, "", "topic", "describe", "orders", b, "--json"), &d)
		if len(d) != 1 {
			t.Fatalf("describe: %+v", d)
		}
		return d[0]
	}
	config := func(d topicDescription, key string) (string, string) {
		for _, c := range d.Configs {
			if c.Key == key {
				if c.Value == nil {
					return "<nil>", c.Source
				}
				return *c.Value, c.Source
			}
		}
		return "", ""
	}
	d := describe()
	if v, src := config(d, "retention.ms"); v != "3600000" || src != "DYNAMIC_TOPIC_CONFIG" {
		t.Fatalf("retention.ms %q from %q: %+v", v, src, d.Configs)
	}
	if len(d.Partitions) != 3 || d.Partitions[2].Partition != 2 || d.Partitions[0].HighWatermark != 0 {
		t.Fatalf("partitions: %+v", d.Partitions)
	}
	out = ok(t, "", "topic", "describe", "orders", b)
	for _, want := range []string{"NAME", "orders", "CONFIGS", "retention.ms", "3600000", "DYNAMIC_TOPIC_CONFIG", "PARTITIONS", "HIGH-WATERMARK"} {
		if !strings.Contains(out, want) {
			t.Fatalf("describe lacks %q:\n%s", want, out)
		}
	}
	out = ok(t, "", "topic", "describe", "orders", "--non-default", b)
	if strings.Contains(out, "DEFAULT_CONFIG") || !strings.Contains(out, "cleanup.policy") {
		t.Fatalf("describe --non-default:\n%s", out)
	}

	// Alter: set one config, remove another, add partitions.
	ok(t, "", "topic", "alter", "orders", "--config", "retention.ms=7200000", "--delete-config", "cleanup.policy", b)
	d = describe()
	if v, _ := config(d, "retention.ms"); v != "7200000" {
		t.Fatalf("retention.ms after alter: %q", v)
	}
	if _, src := config(d, "cleanup.policy"); src == "DYNAMIC_TOPIC_CONFIG" {
		t.Fatalf("cleanup.policy still set on the topic: %+v", d.Configs)
	}
	ok(t, "", "topic", "alter", "orders", "--partitions", "5", b)
	if d = describe(); len(d.Partitions) != 5 {
		t.Fatalf("partitions after alter: %d", len(d.Partitions))
	}
	fails(t, 1, "INVALID_PARTITIONS", "", "topic", "alter", "orders", "--partitions", "2", b)
	fails(t, 1, "UNKNOWN_TOPIC_OR_PARTITION", "", "topic", "alter", "nope", "--config", "retention.ms=1", b)

	// Delete.
	out = ok(t, "", "topic", "delete", "orders", b)
	if !strings.Contains(out, "deleted") {
		t.Fatalf("delete:\n%s", out)
	}
	fails(t, 1, "UNKNOWN_TOPIC_OR_PARTITION", "", "topic", "describe", "orders", b)
	fails(t, 1, "UNKNOWN_TOPIC_OR_PARTITION", "", "topic", "delete", "orders", b)
}
