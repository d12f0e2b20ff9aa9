package tierplan

import (
	"slices"
	"strconv"
	"time"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/coordinator/layout"
)

// Tiering defaults, which the coordinator's Options take when unset.
const (
	// DefaultWALRetention is Options.WALRetention's default.
	DefaultWALRetention = 10 * time.Minute
	// DefaultTierInterval is Options.TierInterval's default.
	DefaultTierInterval = 10 * time.Second
	// DefaultTierJobLease is Options.TierJobLease's default.
	DefaultTierJobLease = 2 * time.Minute
	// MaxJobBatches bounds the batches of one job, so that its claim reply
	// stays well within a NATS message (about 20 bytes a batch).
	MaxJobBatches = 20000
)

// Settings are a topic's effective tiering and retention configs.
type Settings struct {
	// LocalMs and LocalBytes are the WAL retention (-1: no limit).
	LocalMs, LocalBytes int64
	// SegmentBytes and SegmentMs cut a job's range.
	SegmentBytes, SegmentMs int64
	// RetentionMs and RetentionBytes are the delete policy's (-1: no
	// limit); Deletes is false for a compact-only topic, which keeps
	// everything.
	RetentionMs, RetentionBytes int64
	Deletes                     bool
}

// SettingsOf returns the tier settings of a topic with configs.
// walRetention and walRetentionBytes (Options.WALRetention and
// WALRetentionBytes) stand in for local.retention.ms and
// local.retention.bytes at -2, Kafka's "use the log's".
func SettingsOf(configs map[string]string, walRetention time.Duration, walRetentionBytes int64) Settings {
	get := func(name string) int64 { return ConfigInt(configs, name) }
	s := Settings{
		LocalMs: get(coordapi.ConfigLocalRetentionMs), LocalBytes: get(coordapi.ConfigLocalRetentionBytes),
		SegmentBytes: get(coordapi.ConfigSegmentBytes), SegmentMs: get(coordapi.ConfigSegmentMs),
		RetentionMs: get(coordapi.ConfigRetentionMs), RetentionBytes: get(coordapi.ConfigRetentionBytes),
	}
	if s.LocalMs == -2 {
		s.LocalMs = walRetention.Milliseconds()
	}
	if s.LocalBytes == -2 {
		s.LocalBytes = walRetentionBytes
	}
	if s.LocalBytes == 0 && walRetentionBytes == 0 {
		s.LocalBytes = -1
	}
	s.SegmentBytes = min(max(s.SegmentBytes, 1), layout.MaxSegmentData)
	var compacts bool
	s.Deletes, compacts = CleanupPolicy(configs)
	if compacts {
		// Compaction runs on segments only: a WAL batch older than
		// max.compaction.lag.ms is consolidated then, so that it can be
		// compacted in time.
		if maxLag := ConfigInt(configs, coordapi.ConfigMaxCompactionLagMs); maxLag > 0 && (s.LocalMs < 0 || maxLag < s.LocalMs) {
			s.LocalMs = maxLag
		}
	}
	return s
}

// CompactSettings are a compacted topic's cleaner configs.
type CompactSettings struct {
	// Compacts says cleanup.policy includes compact.
	Compacts bool
	// MinDirtyRatio is min.cleanable.dirty.ratio (0.5 when unset or out
	// of [0, 1]).
	MinDirtyRatio float64
	// MinLagMs, MaxLagMs and DeleteRetentionMs are
	// min.compaction.lag.ms, max.compaction.lag.ms and delete.retention.ms.
	MinLagMs, MaxLagMs, DeleteRetentionMs int64
}

// CompactSettingsOf returns the cleaner configs of a topic with configs.
func CompactSettingsOf(configs map[string]string) CompactSettings {
	_, compacts := CleanupPolicy(configs)
	s := CompactSettings{
		Compacts:          compacts,
		MinDirtyRatio:     0.5,
		MinLagMs:          ConfigInt(configs, coordapi.ConfigMinCompactionLagMs),
		MaxLagMs:          ConfigInt(configs, coordapi.ConfigMaxCompactionLagMs),
		DeleteRetentionMs: ConfigInt(configs, coordapi.ConfigDeleteRetentionMs),
	}
	if v, ok := configs[coordapi.ConfigMinCleanableDirtyRatio]; ok {
		if f, err := strconv.ParseFloat(v, 64); err == nil && f >= 0 && f <= 1 {
			s.MinDirtyRatio = f
		}
	}
	return s
}

// ConfigInt returns an integer topic config, or its default: a value
// that does not parse counts as unset, since configs were validated when
// they were set.
func ConfigInt(configs map[string]string, name string) int64 {
	if v, ok := configs[name]; ok {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			return n
		}
	}
	d, _ := coordapi.LookupTopicConfig(name)
	n, _ := strconv.ParseInt(d.Default, 10, 64)
	return n
}

// CleanupPolicy reports whether a topic's cleanup.policy (default delete)
// includes delete and compact.
func CleanupPolicy(configs map[string]string) (deletes, compacts bool) {
	policy, ok := configs[coordapi.ConfigCleanupPolicy]
	if !ok || policy == "" {
		policy = "delete"
	}
	list := coordapi.SplitConfigList(policy)
	return slices.Contains(list, "delete"), slices.Contains(list, "compact")
}
