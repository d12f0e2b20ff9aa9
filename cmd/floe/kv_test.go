package main

import (
	"encoding/base64"
	"strconv"
	"strings"
	"testing"
)

// TestKVGet: kv get against a compacted topic with kv.index.enabled=true:
// the latest value of a key, its partition and offset with --json, keys
// in base64url and with a slash, and /kv's JSON errors with exit 1.
func TestKVGet(t *testing.T) {
	n := startNode(t)
	b, h := "--brokers="+n.KafkaAddr(), "--http="+n.HTTPAddr()
	ok(t, "", "topic", "create", "users", "--partitions", "3", "--config", "cleanup.policy=compact", "--config", "kv.index.enabled=true", b)
	ok(t, "", "topic", "create", "plain", b)
	ok(t, "alice|v1\nbob|b1\nalice|v2\nsl/ash|slashed\n\x00bin|binary\n", "produce", "users", "--key-separator", "|", b)

	if out := ok(t, "", "kv", "get", "users", "alice", h); out != "v2\n" {
		t.Fatalf("kv get alice: %q", out)
	}
	if out := ok(t, "", "kv", "get", "users", "alice", "--raw", h); out != "v2" {
		t.Fatalf("kv get --raw: %q", out)
	}
	if out := ok(t, "", "kv", "get", "users", "sl/ash", h); out != "slashed\n" {
		t.Fatalf("kv get of a key with a slash: %q", out)
	}
	if out := ok(t, "", "kv", "get", "users", base64.RawURLEncoding.EncodeToString([]byte("\x00bin")), "--base64", h); out != "binary\n" {
		t.Fatalf("kv get --base64: %q", out)
	}
	var r kvResult
	decode(t, ok(t, "", "kv", "get", "users", "bob", "--json", h), &r)
	if r.Value != "b1" || r.ValueEncoding != "utf8" || r.Offset < 0 || r.Timestamp == 0 {
		t.Fatalf("kv get --json: %+v", r)
	}
	// The partition the record went to, and only there.
	var recs []consumedRecord
	for _, l := range strings.Split(strings.TrimSpace(ok(t, "", "consume", "users", "-e", "--json", b)), "\n") {
		var cr consumedRecord
		decode(t, l, &cr)
		recs = append(recs, cr)
	}
	var bob consumedRecord
	for _, cr := range recs {
		if cr.Key != nil && *cr.Key == "bob" {
			bob = cr
		}
	}
	if bob.Key == nil {
		t.Fatalf("consume -e printed no record of bob: %+v", recs)
	}
	if r.Partition != bob.Partition || r.Offset != bob.Offset {
		t.Fatalf("kv get bob at %d/%d, consumed at %d/%d", r.Partition, r.Offset, bob.Partition, bob.Offset)
	}
	ok(t, "", "kv", "get", "users", "bob", "--partition", itoa(bob.Partition), h)

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"users", "carol"}, "404 Not Found: 40404"},
		{[]string{"users", "bob", "--partition", itoa((bob.Partition + 1) % 3)}, "40404"},
		{[]string{"users", "bob", "--partition", "9"}, "400 Bad Request: 40003"},
		{[]string{"nosuch", "k"}, "40401"},
		{[]string{"plain", "k"}, "40403"},
	} {
		fails(t, 1, tc.want, "", append([]string{"kv", "get", h}, tc.args...)...)
	}
	fails(t, 1, "is the broker's HTTP listener", "", "kv", "get", "users", "alice", "--http", "127.0.0.1:1")
}

func itoa(p int32) string { return strconv.Itoa(int(p)) }
