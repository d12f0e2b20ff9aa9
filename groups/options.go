package groups

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/cockroachdb/pebble/vfs"

	"github.com/floe-io/floe/groups/share"
	"github.com/floe-io/floe/groups/sharegroups"
)

// Options configures a Groups coordinator. Durations mirror the Apache Kafka
// broker configs named in each doc comment.
type Options struct {
	// Dir is the Pebble directory for committed offsets and group metadata;
	// it is created if missing. Required.
	Dir string
	// Logger receives the coordinator's and Pebble's logs. Default: discard.
	Logger *slog.Logger
	// Now returns the current time; tests replace it. Default: time.Now.
	Now func() time.Time
	// Topics lists the cluster's topics: KIP-848 consumer groups, whose
	// partitions the coordinator assigns itself, resolve subscriptions with
	// it, and OffsetFetch hides offsets of recreated topics. Without it,
	// every KIP-848 subscription resolves to nothing. When it is also a
	// TopicResolver, members can subscribe to hierarchical views
	// ("base/KEY") by name. Default: nil.
	Topics TopicLister
	// FS replaces the filesystem under Pebble: vfs.NewMem() for a state
	// that lives in memory (tests of other packages). Default: the OS
	// filesystem.
	FS vfs.FS
	// Log, when set, is the replicated log of the group state (package
	// ha): every batch is appended to it and applied only once the log has
	// it. Default: none, batches are written to Pebble directly, synced.
	Log Log

	// MinSessionTimeout is group.min.session.timeout.ms: a JoinGroup with a
	// shorter session timeout is INVALID_SESSION_TIMEOUT. Default: 6s.
	MinSessionTimeout time.Duration
	// MaxSessionTimeout is group.max.session.timeout.ms. Default: 30m.
	MaxSessionTimeout time.Duration
	// InitialRebalanceDelay is group.initial.rebalance.delay.ms: how long the
	// first rebalance of an empty group waits for more members (extended by
	// the same delay while members keep arriving, up to the rebalance
	// timeout). Default: 0, as in the server.properties Kafka ships; Kafka's
	// built-in default is 3s.
	InitialRebalanceDelay time.Duration
	// MaxGroupSize is group.max.size; 0 means unlimited. Default: 0.
	MaxGroupSize int
	// NewMemberJoinTimeout bounds how long a new member's JoinGroup may wait
	// in a rebalance before the member is dropped (Kafka's fixed 5 minutes).
	// Default: 5m.
	NewMemberJoinTimeout time.Duration
	// OffsetRetention is offsets.retention.minutes: committed offsets of an
	// empty group expire this long after it became empty (for a simple
	// group, after the commit). Default: 7 days.
	OffsetRetention time.Duration
	// RetentionCheckInterval is offsets.retention.check.interval.ms: how
	// often expired offsets and empty groups without offsets are removed.
	// Default: 10m.
	RetentionCheckInterval time.Duration
	// MaxMetadataBytes is offset.metadata.max.bytes: a longer commit metadata
	// string is OFFSET_METADATA_TOO_LARGE. Default: 4096.
	MaxMetadataBytes int

	// VerifyTxn, when set, checks every TxnOffsetCommit with the
	// transaction coordinator before its offsets are written (see
	// TxnVerifier). Default: nil, TxnOffsetCommits are not verified.
	VerifyTxn TxnVerifier

	// ConsumerSessionTimeout is group.consumer.session.timeout.ms for
	// KIP-848 consumer groups. Default: 45s.
	ConsumerSessionTimeout time.Duration
	// ConsumerHeartbeatInterval is group.consumer.heartbeat.interval.ms for
	// KIP-848 consumer groups. Default: 5s.
	ConsumerHeartbeatInterval time.Duration

	// Partitions reads partitions' log start offsets and high watermarks
	// (share.auto.offset.reset: where a share-partition starts when a share
	// group is first assigned it); *coordinator.Coordinator implements it.
	// Share groups acquire records through it too (see
	// sharegroups.Options.Partitions). Default: Topics, when it implements
	// sharegroups.PartitionReader; without one a share-partition starts at
	// offset 0.
	Partitions sharegroups.PartitionReader

	// ShareSessionTimeout is group.share.session.timeout.ms: a share group
	// member that sends no heartbeat for this long is removed. Default: 45s.
	ShareSessionTimeout time.Duration
	// ShareHeartbeatInterval is group.share.heartbeat.interval.ms, the
	// interval share group members are told to heartbeat at. Default: 5s.
	ShareHeartbeatInterval time.Duration
	// ShareMaxGroupSize is group.share.max.size: a member joining a share
	// group of this many is GROUP_MAX_SIZE_REACHED. Default: 200.
	ShareMaxGroupSize int
	// ShareRecordLockDuration is group.share.record.lock.duration.ms, how
	// long a share group member holds the records it acquired; the group
	// config share.record.lock.duration.ms overrides it, within
	// [15s, 60s]. Default: 30s.
	ShareRecordLockDuration time.Duration
	// ShareDeliveryCountLimit is group.share.delivery.count.limit.
	// Default: 5.
	ShareDeliveryCountLimit int
	// SharePartitionMaxRecordLocks is
	// group.share.partition.max.record.locks. Default: 2000.
	SharePartitionMaxRecordLocks int

	// manualExpiry stops the background loop from running deadlines:
	// tests on a fake clock call expire themselves.
	manualExpiry bool
}

// Validate reports every invalid option at once, each named by the flag
// of cmd/coordinator that sets it (if one does), then by its field.
func (o *Options) Validate() error {
	var errs []error
	if o.Dir == "" && o.FS == nil {
		errs = append(errs, errors.New("groups: --groups-dir (Options.Dir) is required"))
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"--group-min-session-timeout (Options.MinSessionTimeout)", o.MinSessionTimeout},
		{"--group-max-session-timeout (Options.MaxSessionTimeout)", o.MaxSessionTimeout},
		{"--group-initial-rebalance-delay (Options.InitialRebalanceDelay)", o.InitialRebalanceDelay},
		{"Options.NewMemberJoinTimeout", o.NewMemberJoinTimeout},
		{"--offsets-retention (Options.OffsetRetention)", o.OffsetRetention},
		{"Options.RetentionCheckInterval", o.RetentionCheckInterval},
		{"Options.ConsumerSessionTimeout", o.ConsumerSessionTimeout},
		{"Options.ConsumerHeartbeatInterval", o.ConsumerHeartbeatInterval},
		{"--group-share-session-timeout (Options.ShareSessionTimeout)", o.ShareSessionTimeout},
		{"--group-share-heartbeat-interval (Options.ShareHeartbeatInterval)", o.ShareHeartbeatInterval},
		{"--group-share-record-lock-duration (Options.ShareRecordLockDuration)", o.ShareRecordLockDuration},
	} {
		if d.v < 0 {
			errs = append(errs, fmt.Errorf("groups: %s %s is negative", d.name, d.v))
		}
	}
	if o.MinSessionTimeout > 0 && o.MaxSessionTimeout > 0 && o.MinSessionTimeout > o.MaxSessionTimeout {
		errs = append(errs, fmt.Errorf("groups: --group-min-session-timeout %s exceeds --group-max-session-timeout %s (Options.MinSessionTimeout, MaxSessionTimeout)", o.MinSessionTimeout, o.MaxSessionTimeout))
	}
	if o.MaxGroupSize < 0 {
		errs = append(errs, fmt.Errorf("groups: Options.MaxGroupSize %d is negative", o.MaxGroupSize))
	}
	if o.ShareSessionTimeout > 0 && o.ShareHeartbeatInterval > 0 && o.ShareSessionTimeout <= o.ShareHeartbeatInterval {
		errs = append(errs, fmt.Errorf("groups: --group-share-session-timeout %s must exceed --group-share-heartbeat-interval %s (Options.ShareSessionTimeout, ShareHeartbeatInterval)", o.ShareSessionTimeout, o.ShareHeartbeatInterval))
	}
	if d := o.ShareRecordLockDuration; d != 0 && (d < minShareRecordLock || d > maxShareRecordLock) {
		errs = append(errs, fmt.Errorf("groups: --group-share-record-lock-duration (Options.ShareRecordLockDuration) %s is not in [%s, %s]", d, minShareRecordLock, maxShareRecordLock))
	}
	for _, n := range []struct {
		name     string
		v        int
		min, max int
	}{
		{"--group-share-max-size (Options.ShareMaxGroupSize)", o.ShareMaxGroupSize, 1, 1000},
		{"--group-share-delivery-count-limit (Options.ShareDeliveryCountLimit)", o.ShareDeliveryCountLimit, 2, 10},
		{"--group-share-partition-max-record-locks (Options.SharePartitionMaxRecordLocks)", o.SharePartitionMaxRecordLocks, 100, 10000},
	} {
		if n.v != 0 && (n.v < n.min || n.v > n.max) {
			errs = append(errs, fmt.Errorf("groups: %s %d is not in [%d, %d]", n.name, n.v, n.min, n.max))
		}
	}
	if o.MaxMetadataBytes < 0 {
		errs = append(errs, fmt.Errorf("groups: Options.MaxMetadataBytes %d is negative", o.MaxMetadataBytes))
	}
	return errors.Join(errs...)
}

func (o *Options) setDefaults() {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.MinSessionTimeout == 0 {
		o.MinSessionTimeout = 6 * time.Second
	}
	if o.MaxSessionTimeout == 0 {
		o.MaxSessionTimeout = 30 * time.Minute
	}
	if o.NewMemberJoinTimeout == 0 {
		o.NewMemberJoinTimeout = 5 * time.Minute
	}
	if o.OffsetRetention == 0 {
		o.OffsetRetention = 7 * 24 * time.Hour
	}
	if o.RetentionCheckInterval == 0 {
		o.RetentionCheckInterval = 10 * time.Minute
	}
	if o.MaxMetadataBytes == 0 {
		o.MaxMetadataBytes = 4096
	}
	if o.ConsumerSessionTimeout == 0 {
		o.ConsumerSessionTimeout = 45 * time.Second
	}
	if o.ConsumerHeartbeatInterval == 0 {
		o.ConsumerHeartbeatInterval = 5 * time.Second
	}
	if o.ShareSessionTimeout == 0 {
		o.ShareSessionTimeout = 45 * time.Second
	}
	if o.ShareHeartbeatInterval == 0 {
		o.ShareHeartbeatInterval = 5 * time.Second
	}
	if o.ShareMaxGroupSize == 0 {
		o.ShareMaxGroupSize = 200
	}
	if o.ShareRecordLockDuration == 0 {
		o.ShareRecordLockDuration = share.DefaultLockDuration
	}
	if o.ShareDeliveryCountLimit == 0 {
		o.ShareDeliveryCountLimit = share.DefaultDeliveryCountLimit
	}
	if o.SharePartitionMaxRecordLocks == 0 {
		o.SharePartitionMaxRecordLocks = share.DefaultMaxRecordLocks
	}
	if o.Partitions == nil {
		if p, ok := o.Topics.(sharegroups.PartitionReader); ok {
			o.Partitions = p
		}
	}
}
