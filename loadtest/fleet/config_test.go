package fleet

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/floe-io/floe/loadtest"
)

// TestValidate checks that every bad field is reported, all at once, and
// that the defaults pass.
func TestValidate(t *testing.T) {
	ok := DefaultConfig()
	if err := ok.Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	for _, tc := range []struct {
		name string
		mod  func(*Config)
		want []string
	}{
		{"fan-out above the partitions", func(c *Config) { c.Partitions, c.Topics, c.BatchesPerObject, c.ConsumerPartitions = 10, 2, 11, 1 }, []string{"--batches-per-object 11"}},
		{"fewer partitions than topics", func(c *Config) { c.Partitions, c.Topics, c.BatchesPerObject, c.ConsumerPartitions = 3, 4, 1, 1 }, []string{"--partitions 3"}},
		{"every bad field at once", func(c *Config) {
			c.Brokers, c.ObjectsPerSecond, c.Arrivals, c.PartitionChoice = 0, 0, "bursty", "hot"
			c.FetchAPI, c.Warmup = "all", c.Duration
		}, []string{"--brokers 0", "--objects-per-second 0", `--arrivals "bursty"`, `--partition-choice "hot"`, `--fetch-api "all"`, "--warmup"}},
		{"zipf needs s above 1", func(c *Config) { c.PartitionChoice, c.ZipfS = ChoiceZipf, 1 }, []string{"--zipf-s 1"}},
		{"consumers' partitions", func(c *Config) { c.ConsumerPartitions = c.Partitions + 1 }, []string{"--consumer-partitions"}},
		{"no consumers, no consumer checks", func(c *Config) { c.Consumers, c.FetchInterval, c.FetchAPI = 0, 0, "" }, nil},
		{"groups' interval", func(c *Config) { c.OffsetCommitInterval = -time.Second }, []string{"--offset-commit-interval"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			tc.mod(&c)
			err := c.Validate()
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("want no error, got %v", err)
				}
				return
			}
			var ce *loadtest.ConfigError
			if !errors.As(err, &ce) || !errors.Is(err, loadtest.ErrInvalidConfig) {
				t.Fatalf("want a *loadtest.ConfigError, got %v", err)
			}
			if len(ce.Problems) != len(tc.want) {
				t.Fatalf("problems %q, want %d", ce.Problems, len(tc.want))
			}
			for i, w := range tc.want {
				if !strings.HasPrefix(ce.Problems[i], w) {
					t.Errorf("problem %d: %q, want it to start with %q", i, ce.Problems[i], w)
				}
			}
		})
	}
}
