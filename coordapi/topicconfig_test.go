package coordapi

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestTierConfigsValidated checks the tiering and retention configs'
// bounds: what Kafka accepts passes, the rest is INVALID_CONFIG.
func TestTierConfigsValidated(t *testing.T) {
	for _, tt := range []struct {
		name, value string
		ok          bool
	}{
		{ConfigSegmentBytes, "1048576", true},
		{ConfigSegmentBytes, "1048575", false},
		{ConfigSegmentBytes, "14", false},
		{ConfigSegmentBytes, "2147483648", false}, // an int config
		{ConfigSegmentMs, "1", true},
		{ConfigSegmentMs, "0", false},
		{ConfigRetentionMs, "-1", true},
		{ConfigRetentionMs, "0", true},
		{ConfigRetentionMs, "-2", false},
		{ConfigRetentionBytes, "-1", true},
		{ConfigRetentionBytes, "-2", false},
		{ConfigLocalRetentionMs, "-2", true},
		{ConfigLocalRetentionMs, "-1", false}, // no limit, under retention.ms of 7 days
		{ConfigLocalRetentionMs, "1000", true},
		{ConfigLocalRetentionMs, "604800001", false}, // above retention.ms
		{ConfigLocalRetentionMs, "-3", false},
		{ConfigLocalRetentionBytes, "-2", true},
		{ConfigLocalRetentionBytes, "1000000", true},
		{ConfigLocalRetentionBytes, "1000001", false},
		{ConfigLocalRetentionBytes, "-3", false},
		{ConfigLocalRetentionBytes, "x", false},
	} {
		cfg := map[string]string{tt.name: tt.value}
		if tt.name == ConfigLocalRetentionBytes {
			cfg[ConfigRetentionBytes] = "1000000" // else -1: no limit
		}
		_, err := ValidateTopicConfigs(cfg, false, false)
		if tt.ok && err != nil {
			t.Errorf("%s=%s: %v", tt.name, tt.value, err)
		}
		if !tt.ok && !errors.Is(err, kerr.InvalidConfig) {
			t.Errorf("%s=%s: error %v, want INVALID_CONFIG", tt.name, tt.value, err)
		}
	}
}

// TestEnforcedConfigs checks that every config floe reads by name is
// marked Enforced (docs/configuration.md says which configs act).
func TestEnforcedConfigs(t *testing.T) {
	for _, name := range []string{
		ConfigCleanupPolicy, ConfigMessageTimestampType, ConfigKVIndexEnabled, ConfigHierarchicalEnabled,
		ConfigMinCompactionLagMs, ConfigMaxCompactionLagMs, ConfigDeleteRetentionMs, ConfigMinCleanableDirtyRatio,
		ConfigRetentionMs, ConfigRetentionBytes, ConfigLocalRetentionMs, ConfigLocalRetentionBytes,
		ConfigSegmentBytes, ConfigSegmentMs, "max.message.bytes",
	} {
		if d, ok := LookupTopicConfig(name); !ok || !d.Enforced {
			t.Errorf("%s: defined %v, enforced %v; want both", name, ok, d.Enforced)
		}
	}
}
