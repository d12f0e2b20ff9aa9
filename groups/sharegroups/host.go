package sharegroups

import (
	"context"
	"time"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/groups/share"
)

// Host is the group coordinator share groups live in (package groups):
// it owns the group ids (one group id is a classic group, a KIP-848 group
// or a share group), their mutexes, the topic snapshot, the group configs,
// the deadline loop and the Pebble share groups are written to.
type Host interface {
	// Enter starts a call: false once the host is closing, else Leave
	// must follow once the call no longer uses the state.
	Enter() bool
	Leave()
	// LockGroup returns group name's entry with its mutex held, creating
	// it (Empty) when create is set; nil when it does not exist. created
	// reports a new entry, which the caller removes (Entry.Remove) if its
	// request left it unused.
	LockGroup(name string, create bool) (e Entry, created bool)
	// Groups returns every group's entry, unlocked.
	Groups() []Entry
	// Topics returns a recent topic snapshot.
	Topics(ctx context.Context) (Topics, error)
	// NoteSubscribed has the next snapshots resolve the views among names
	// ("base/KEY"), which the topic list does not hold.
	NoteSubscribed(names []string)
	// Config returns group's share configuration: the broker settings,
	// with the group configs over them.
	Config(group string) Config
	// NewBatch starts a write to the host's Pebble.
	NewBatch() Batch
	// GroupRecord is the key and value of the group record of share group
	// group at epoch (emptySinceMs: when it became Empty, 0 when it has
	// members), in the host's family 'g'.
	GroupRecord(group string, epoch int32, emptySinceMs int64) (key, value []byte)
	// Wake tells the host's deadline loop that the next deadline of
	// ExpireLocks moved earlier.
	Wake()
}

// Entry is one group id in the Host. Its mutex guards the share group
// state it holds (Share) with the rest of the group; the methods but Name,
// Lock and Unlock need it held.
type Entry interface {
	Name() string
	Lock()
	Unlock()
	// Dead reports that the group was removed from the host meanwhile.
	Dead() bool
	// Share is the group's share group state; nil when it is not a share
	// group.
	Share() *Group
	// SetShare makes the group a share group (Empty) with state s, or,
	// with nil, no longer one.
	SetShare(s *Group)
	// Unused reports that the group holds nothing at all (no members, no
	// offsets, no durable record), so that it may become a share group.
	Unused() bool
	// Persisted reports that the group has a durable record;
	// SetPersisted notes one was written.
	Persisted() bool
	SetPersisted()
	// Remove drops the group from the host (its durable state already
	// deleted, or never written).
	Remove()
	// WakeAt has the host's deadline loop call Expire on the group by t.
	WakeAt(t time.Time)
}

// Topics is the topic metadata at one moment, as the Host's snapshot
// holds it: the listed topics, and the views members subscribed to.
type Topics interface {
	// Topic is topic name's id, partition count and, for a view, its base
	// and key.
	Topic(name string) (coordapi.Topic, bool)
	// TopicName is the name of topic id.
	TopicName(id coordapi.TopicID) (string, bool)
}

// Batch is a write to the Host's Pebble, applied whole.
type Batch interface {
	Set(key, value []byte)
	Delete(key []byte)
	DeleteRange(start, end []byte)
	// Start writes the batch, returning once it is applied: wait returns
	// once it is durable, and nothing derived from the batch may be
	// answered before. The host keeps the order of the batches started.
	Start() (wait func() error, err error)
}

// Config is a share group's configuration, as the group configs
// (share.*) and the broker settings under them give it.
type Config struct {
	// Partition configures the group's share-partitions
	// (share.record.lock.duration.ms, share.delivery.count.limit).
	Partition share.Config
	// ReadCommitted is share.isolation.level=read_committed.
	ReadCommitted bool
	// Reset is share.auto.offset.reset.
	Reset OffsetReset
}

// OffsetReset is a parsed share.auto.offset.reset: where a share-partition
// starts. The zero value is latest.
type OffsetReset struct {
	Earliest bool
	// ByDuration resets to the first offset at or after now - By.
	ByDuration bool
	By         time.Duration
}
