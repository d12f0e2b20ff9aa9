package sharegroups

import (
	"errors"
	"log/slog"
	"sync"
	"time"
)

// ErrClosed is returned by ShareAcquire and ShareRelease once the Host is
// closing. It is groups.ErrClosed (the same value, and the same text on
// the wire): share groups close with the group coordinator.
var ErrClosed = errors.New("groups: closed")

// Options configures a Coordinator; package groups fills them from its
// own (groups.Options' Share* fields).
type Options struct {
	// Logger receives the share groups' logs. Required.
	Logger *slog.Logger
	// Now is the coordinator's clock. Required.
	Now func() time.Time
	// Done is closed once the host's deadline loop stopped (at Close):
	// held ShareAcquires answer then. Required.
	Done <-chan struct{}
	// Partitions reads partitions' offsets, where share-partitions start
	// and what they acquire; when it is also a BatchFinder, a
	// KeyBatchFinder or a CommitSubscriber, share groups use those too.
	// Default: nil, share-partitions start at offset 0 and acquire
	// nothing.
	Partitions PartitionReader
	// Resolver resolves views by id (their base topic and key). Default:
	// nil, only the views in the topic snapshot are known.
	Resolver TopicByIDResolver
	// SessionTimeout is group.share.session.timeout.ms; HeartbeatInterval
	// group.share.heartbeat.interval.ms; MaxGroupSize group.share.max.size.
	// Required.
	SessionTimeout    time.Duration
	HeartbeatInterval time.Duration
	MaxGroupSize      int
}

// Coordinator is the share group coordinator (KIP-932): share groups'
// membership and assignment, their share-partitions (package share) and
// the acquisitions on them, and the share-group offsets admin APIs. It
// keeps its groups' state in the Host's group entries, under their
// mutexes.
type Coordinator struct {
	host Host
	opts Options
	log  *slog.Logger
	now  func() time.Time

	locks lockScheduler // record locks (sched.go)
	// wait holds the ShareAcquires waiting for records (fetch.go);
	// commits is the subscription to the commit notices that wake them
	// (SubscribeCommits).
	wait  waiters
	views viewCache // the views share groups read, by view id (views.go)

	commits struct {
		sync.Mutex
		sub  CommitSubscriber // nil without (Options.Partitions is none)
		stop func()           // nil until subscribed
	}
}

// New returns the share group coordinator of host.
func New(host Host, opts Options) *Coordinator {
	c := &Coordinator{host: host, opts: opts, log: opts.Logger, now: opts.Now}
	if sub, ok := opts.Partitions.(CommitSubscriber); ok {
		c.commits.sub = sub
	}
	return c
}

// SubscribeCommits subscribes to the commit notices that wake held share
// fetches, once: at the Host's Open when a share group exists, else at the
// first ShareGroupHeartbeat, so that a group coordinator without share
// groups takes none. On shard 0 of a sharded coordinator they come from
// every shard over NATS, each notice naming its commit's batches, and
// decoding them cost shard 0 about 4% of its CPU under a fleet's commits,
// for nothing when no fetch can wait. Called at Open or within a call, so
// never after Close has stopped the subscription.
func (c *Coordinator) SubscribeCommits() {
	c.commits.Lock()
	defer c.commits.Unlock()
	if c.commits.sub == nil || c.commits.stop != nil {
		return
	}
	c.commits.stop = c.commits.sub.Subscribe(c.wait.notify)
}

// Close stops the commit notices, before the host stops its loop.
func (c *Coordinator) Close() {
	c.commits.Lock()
	if c.commits.stop != nil {
		c.commits.stop()
	}
	c.commits.Unlock()
}

// Held is the number of ShareAcquires held on a partition, waiting for
// records (for tests, which wait for a fetch to be held).
func (c *Coordinator) Held(id [16]byte, partition int32) int {
	c.wait.mu.Lock()
	defer c.wait.mu.Unlock()
	return len(c.wait.m[tp{id, partition}])
}

// lockGroup returns group name locked (Host.LockGroup), its share state
// nil when it is not a share group; nil when it does not exist.
func (c *Coordinator) lockGroup(name string, create bool) (*group, bool) {
	e, created := c.host.LockGroup(name, create)
	if e == nil {
		return nil, false
	}
	return c.open(e), created
}

// group is a share group's entry, locked, with its state.
type group struct {
	c *Coordinator
	Entry
	s    *Group
	name string
}

// open returns e's group (e's mutex held).
func (c *Coordinator) open(e Entry) *group {
	return &group{c: c, Entry: e, s: e.Share(), name: e.Name()}
}

func msOf(t time.Time) int64 { return t.UnixMilli() }

func noWait() error { return nil }

func strPtr(s string) *string { return &s }

// nilIfEmpty returns nil for "", else a pointer to s: Kafka's
// Optional.orElse(null).
func nilIfEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
