package main

import "testing"

// The memory limit from --memory-limit and GOMEMLIMIT, with the broker's
// buffers as other flags set them.
func TestMemoryLimit(t *testing.T) {
	for _, tc := range []struct {
		name       string
		args       []string
		gomemlimit string
		want       int64
	}{
		{"automatic, defaults", nil, "", 512<<20 + 256<<20 + 64<<20 + 64<<20 + memoryHeadroom - pebbleOffHeap},
		{"automatic follows the cache", []string{"--cache-bytes", "1073741824", "--kv-batch-cache-bytes", "-1"}, "", 1<<30 + 256<<20 + 64<<20 + memoryHeadroom - pebbleOffHeap},
		{"automatic, the coordinator elsewhere: its Pebble is not ours", []string{"--nats-url", "nats://127.0.0.1:4222"}, "", 512<<20 + 256<<20 + 64<<20 + 64<<20 + memoryHeadroom},
		{"GOMEMLIMIT wins over the automatic value", nil, "3GiB", 0},
		{"an explicit flag wins over GOMEMLIMIT", []string{"--memory-limit", "2147483648"}, "3GiB", 2 << 30},
		{"negative: none", []string{"--memory-limit", "-1"}, "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := parseFlags(append([]string{"--data-dir", t.TempDir()}, tc.args...))
			if err != nil {
				t.Fatal(err)
			}
			if got := memoryLimit(f, tc.gomemlimit); got != tc.want {
				t.Fatalf("memory limit %d, want %d", got, tc.want)
			}
		})
	}
}
