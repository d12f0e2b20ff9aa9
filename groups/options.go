package groups

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/cockroachdb/pebble/vfs"
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
}
