package tierplan

import (
	"math"
	"testing"
	"time"

	"github.com/floe-io/floe/coordinator/layout"
)

// TestSettingsOf: a topic's tier settings from its configs, with the
// coordinator's WAL retention standing in at -2 and compaction pulling
// the WAL retention down to max.compaction.lag.ms.
func TestSettingsOf(t *testing.T) {
	const week = 604800000
	for _, tc := range []struct {
		name     string
		configs  map[string]string
		walBytes int64 // Options.WALRetentionBytes
		want     Settings
	}{
		{name: "defaults", walBytes: -1, want: Settings{LocalMs: 600000, LocalBytes: -1, SegmentBytes: 134217728, SegmentMs: week, RetentionMs: week, RetentionBytes: -1, Deletes: true}},
		{name: "wal bytes from options", walBytes: 1 << 20, want: Settings{LocalMs: 600000, LocalBytes: 1 << 20, SegmentBytes: 134217728, SegmentMs: week, RetentionMs: week, RetentionBytes: -1, Deletes: true}},
		{name: "zero bytes everywhere is no limit", configs: map[string]string{"local.retention.bytes": "0"}, walBytes: 0,
			want: Settings{LocalMs: 600000, LocalBytes: -1, SegmentBytes: 134217728, SegmentMs: week, RetentionMs: week, RetentionBytes: -1, Deletes: true}},
		{name: "topic's own", configs: map[string]string{"local.retention.ms": "5", "local.retention.bytes": "7", "segment.bytes": "0", "segment.ms": "9", "retention.ms": "-1", "retention.bytes": "11"}, walBytes: -1,
			want: Settings{LocalMs: 5, LocalBytes: 7, SegmentBytes: 1, SegmentMs: 9, RetentionMs: -1, RetentionBytes: 11, Deletes: true}},
		{name: "segment bytes bounded", configs: map[string]string{"segment.bytes": "9223372036854775807"}, walBytes: -1,
			want: Settings{LocalMs: 600000, LocalBytes: -1, SegmentBytes: layout.MaxSegmentData, SegmentMs: week, RetentionMs: week, RetentionBytes: -1, Deletes: true}},
		{name: "compact only", configs: map[string]string{"cleanup.policy": "compact"}, walBytes: -1,
			want: Settings{LocalMs: 600000, LocalBytes: -1, SegmentBytes: 134217728, SegmentMs: week, RetentionMs: week, RetentionBytes: -1}},
		{name: "max compaction lag below the WAL retention", configs: map[string]string{"cleanup.policy": "compact,delete", "max.compaction.lag.ms": "1000"}, walBytes: -1,
			want: Settings{LocalMs: 1000, LocalBytes: -1, SegmentBytes: 134217728, SegmentMs: week, RetentionMs: week, RetentionBytes: -1, Deletes: true}},
		{name: "max compaction lag with no WAL retention", configs: map[string]string{"cleanup.policy": "compact", "local.retention.ms": "-1", "max.compaction.lag.ms": "1000"}, walBytes: -1,
			want: Settings{LocalMs: 1000, LocalBytes: -1, SegmentBytes: 134217728, SegmentMs: week, RetentionMs: week, RetentionBytes: -1}},
		{name: "max compaction lag above the WAL retention", configs: map[string]string{"cleanup.policy": "compact", "max.compaction.lag.ms": "9000000"}, walBytes: -1,
			want: Settings{LocalMs: 600000, LocalBytes: -1, SegmentBytes: 134217728, SegmentMs: week, RetentionMs: week, RetentionBytes: -1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := SettingsOf(tc.configs, 10*time.Minute, tc.walBytes); got != tc.want {
				t.Fatalf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// TestCompactSettingsOf: the cleaner configs, with a dirty ratio outside
// [0, 1] or unparsable at its default.
func TestCompactSettingsOf(t *testing.T) {
	for _, tc := range []struct {
		name    string
		configs map[string]string
		want    CompactSettings
	}{
		{name: "defaults", want: CompactSettings{MinDirtyRatio: 0.5, MaxLagMs: math.MaxInt64, DeleteRetentionMs: 86400000}},
		{name: "compacted", configs: map[string]string{"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.1", "min.compaction.lag.ms": "3", "max.compaction.lag.ms": "4", "delete.retention.ms": "5"},
			want: CompactSettings{Compacts: true, MinDirtyRatio: 0.1, MinLagMs: 3, MaxLagMs: 4, DeleteRetentionMs: 5}},
		{name: "ratio out of range", configs: map[string]string{"min.cleanable.dirty.ratio": "1.5"}, want: CompactSettings{MinDirtyRatio: 0.5, MaxLagMs: math.MaxInt64, DeleteRetentionMs: 86400000}},
		{name: "ratio unparsable", configs: map[string]string{"min.cleanable.dirty.ratio": "x"}, want: CompactSettings{MinDirtyRatio: 0.5, MaxLagMs: math.MaxInt64, DeleteRetentionMs: 86400000}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := CompactSettingsOf(tc.configs); got != tc.want {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestCleanupPolicy: delete by default, either or both when listed.
func TestCleanupPolicy(t *testing.T) {
	for _, tc := range []struct {
		policy            *string
		deletes, compacts bool
	}{
		{nil, true, false},
		{ptr(""), true, false},
		{ptr("delete"), true, false},
		{ptr("compact"), false, true},
		{ptr("compact,delete"), true, true},
		{ptr("delete, compact"), true, true},
	} {
		configs := map[string]string{}
		if tc.policy != nil {
			configs["cleanup.policy"] = *tc.policy
		}
		if d, c := CleanupPolicy(configs); d != tc.deletes || c != tc.compacts {
			t.Errorf("%v: deletes %v compacts %v, want %v %v", configs, d, c, tc.deletes, tc.compacts)
		}
	}
}

// TestConfigInt: a topic's value, or the config's default when unset or
// unparsable.
func TestConfigInt(t *testing.T) {
	for _, tc := range []struct {
		configs map[string]string
		want    int64
	}{
		{nil, 604800000},
		{map[string]string{"retention.ms": "12"}, 12},
		{map[string]string{"retention.ms": "x"}, 604800000},
	} {
		if got := ConfigInt(tc.configs, "retention.ms"); got != tc.want {
			t.Errorf("%v: %d, want %d", tc.configs, got, tc.want)
		}
	}
}

func ptr[T any](v T) *T { return &v }
