package groups

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/groups/share"
	"github.com/floe-io/floe/groups/sharegroups"
)

// Share groups (KIP-932) are served by package sharegroups, hosted here:
// a share group is a third kind of group id, so its state lives in the
// group's entry (group.mu.share) under group.mu, its records in this
// Pebble, its sessions on this scheduler, and its configs among the group
// configs. Groups forwards the share calls to it; shareHost and group
// give it what it needs (sharegroups.Host and Entry).

// ShareGroupHeartbeat serves KIP-932's ShareGroupHeartbeat (v1); see
// sharegroups.Coordinator.ShareGroupHeartbeat.
func (gs *Groups) ShareGroupHeartbeat(ctx context.Context, c coordapi.ClientInfo, req *kmsg.ShareGroupHeartbeatRequest) *kmsg.ShareGroupHeartbeatResponse {
	return gs.shares.ShareGroupHeartbeat(ctx, c, req)
}

// ShareGroupDescribe serves KIP-932's ShareGroupDescribe (v1); see
// sharegroups.Coordinator.ShareGroupDescribe.
func (gs *Groups) ShareGroupDescribe(ctx context.Context, req *kmsg.ShareGroupDescribeRequest) *kmsg.ShareGroupDescribeResponse {
	return gs.shares.ShareGroupDescribe(ctx, req)
}

// ShareAcquire serves one ShareFetch or ShareAcknowledge of a share group
// member; see sharegroups.Coordinator.ShareAcquire.
func (gs *Groups) ShareAcquire(ctx context.Context, req coordapi.ShareAcquireRequest) (coordapi.ShareAcquireResponse, error) {
	return gs.shares.ShareAcquire(ctx, req)
}

// ShareRelease gives back the records a member acquired through one
// broker; see sharegroups.Coordinator.ShareRelease.
func (gs *Groups) ShareRelease(ctx context.Context, req coordapi.ShareReleaseRequest) error {
	return gs.shares.ShareRelease(ctx, req)
}

// DescribeShareGroupOffsets serves DescribeShareGroupOffsets (v0-v1); see
// sharegroups.Coordinator.DescribeShareGroupOffsets.
func (gs *Groups) DescribeShareGroupOffsets(ctx context.Context, req *kmsg.DescribeShareGroupOffsetsRequest) *kmsg.DescribeShareGroupOffsetsResponse {
	return gs.shares.DescribeShareGroupOffsets(ctx, req)
}

// AlterShareGroupOffsets serves AlterShareGroupOffsets (v0); see
// sharegroups.Coordinator.AlterShareGroupOffsets.
func (gs *Groups) AlterShareGroupOffsets(ctx context.Context, req *kmsg.AlterShareGroupOffsetsRequest) *kmsg.AlterShareGroupOffsetsResponse {
	return gs.shares.AlterShareGroupOffsets(ctx, req)
}

// DeleteShareGroupOffsets serves DeleteShareGroupOffsets (v0); see
// sharegroups.Coordinator.DeleteShareGroupOffsets.
func (gs *Groups) DeleteShareGroupOffsets(ctx context.Context, req *kmsg.DeleteShareGroupOffsetsRequest) *kmsg.DeleteShareGroupOffsetsResponse {
	return gs.shares.DeleteShareGroupOffsets(ctx, req)
}

// ShareMetrics calls fn with every share group's metrics, in group name
// order; see sharegroups.Coordinator.ShareMetrics.
func (gs *Groups) ShareMetrics(ctx context.Context, fn func(sharegroups.GroupMetrics)) error {
	return gs.shares.ShareMetrics(ctx, fn)
}

// shareOptions are the share group coordinator's options (opts set).
func (gs *Groups) shareOptions() sharegroups.Options {
	o := sharegroups.Options{
		Logger:            gs.log,
		Now:               gs.now,
		Done:              gs.done,
		Partitions:        gs.opts.Partitions,
		SessionTimeout:    gs.opts.ShareSessionTimeout,
		HeartbeatInterval: gs.opts.ShareHeartbeatInterval,
		MaxGroupSize:      gs.opts.ShareMaxGroupSize,
	}
	if r, ok := gs.opts.Topics.(sharegroups.TopicByIDResolver); ok {
		o.Resolver = r
	}
	return o
}

// shareConfig is the share-partition configuration of group: the broker
// settings, with the group's share.record.lock.duration.ms and
// share.delivery.count.limit.
func (gs *Groups) shareConfig(group string) share.Config {
	cfg := share.Config{
		MaxRecordLocks:     gs.opts.SharePartitionMaxRecordLocks,
		DeliveryCountLimit: gs.opts.ShareDeliveryCountLimit,
		LockDuration:       gs.opts.ShareRecordLockDuration,
	}
	if ms, err := parseLockDurationMs(gs.groupConfig(group, cfgShareRecordLockDuration)); err == nil && ms > 0 {
		cfg.LockDuration = time.Duration(ms) * time.Millisecond
	}
	if n, err := parseDeliveryCountLimit(gs.groupConfig(group, cfgShareDeliveryCountLimit)); err == nil && n > 0 {
		cfg.DeliveryCountLimit = int(n)
	}
	return cfg
}

// shareHost is Groups as the share group coordinator's sharegroups.Host.
type shareHost struct{ gs *Groups }

func (h shareHost) Enter() bool { return h.gs.enter() }
func (h shareHost) Leave()      { h.gs.leave() }

func (h shareHost) LockGroup(name string, create bool) (sharegroups.Entry, bool) {
	g, created := h.gs.lockGroup(name, create)
	if g == nil {
		return nil, false // a nil Entry, not a nil *group in one
	}
	return g, created
}

func (h shareHost) Groups() []sharegroups.Entry {
	groups := h.gs.snapshot()
	out := make([]sharegroups.Entry, len(groups))
	for i, g := range groups {
		out[i] = g
	}
	return out
}

func (h shareHost) Topics(ctx context.Context) (sharegroups.Topics, error) {
	snap, err := h.gs.topics(ctx)
	if err != nil {
		return nil, err // a nil Topics, not a nil *topicSnapshot in one
	}
	return snap, nil
}

func (h shareHost) NoteSubscribed(names []string) { h.gs.noteSubscribed(names) }

// Config reads the share group configs; a share.auto.offset.reset that
// does not parse (it was checked when set) is latest.
func (h shareHost) Config(group string) sharegroups.Config {
	reset, err := parseAutoOffsetReset(h.gs.groupConfig(group, cfgShareAutoOffsetReset))
	if err != nil {
		reset = sharegroups.OffsetReset{}
	}
	return sharegroups.Config{
		Partition:     h.gs.shareConfig(group),
		ReadCommitted: h.gs.groupConfig(group, cfgShareIsolationLevel) == "read_committed",
		Reset:         reset,
	}
}

func (h shareHost) NewBatch() sharegroups.Batch { return h.gs.newBatch() }

func (h shareHost) GroupRecord(group string, epoch int32, emptySinceMs int64) (key, value []byte) {
	r := groupRecord{protocolType: sharegroups.ProtocolType, generation: epoch, emptySinceMs: emptySinceMs, share: true}
	return groupKey(group), r.encode()
}

func (h shareHost) Wake() {
	select {
	case h.gs.sched.wake <- struct{}{}:
	default:
	}
}

// A group is the share group coordinator's sharegroups.Entry.

func (g *group) Name() string { return g.name }
func (g *group) Lock()        { g.mu.Lock() }
func (g *group) Unlock()      { g.mu.Unlock() }

func (g *group) Dead() bool                { return g.mu.dead }
func (g *group) Share() *sharegroups.Group { return g.mu.share }

// SetShare makes g a share group (Empty), or no longer one.
func (g *group) SetShare(s *sharegroups.Group) {
	g.mu.share = s
	if s != nil {
		g.mu.state = Empty
	}
}

func (g *group) Unused() bool       { return g.unusedLocked() }
func (g *group) Persisted() bool    { return g.mu.persisted }
func (g *group) SetPersisted()      { g.mu.persisted = true }
func (g *group) Remove()            { g.removeLocked() }
func (g *group) WakeAt(t time.Time) { g.wakeAtLocked(t) }

// topicSnapshot is the sharegroups.Topics of the share groups.

func (s *topicSnapshot) Topic(name string) (coordapi.Topic, bool) {
	m, ok := s.byName[name]
	if !ok {
		return coordapi.Topic{}, false
	}
	return coordapi.Topic{ID: coordapi.TopicID(m.id), Name: name, Partitions: m.partitions, View: m.view}, true
}

func (s *topicSnapshot) TopicName(id coordapi.TopicID) (string, bool) {
	name, ok := s.byID[topicID(id)]
	return name, ok
}

// batch is the share group coordinator's sharegroups.Batch.

func (b batch) Set(key, value []byte)         { b.b.Set(key, value, nil) }
func (b batch) Delete(key []byte)             { b.b.Delete(key, nil) }
func (b batch) DeleteRange(start, end []byte) { b.b.DeleteRange(start, end, nil) }
func (b batch) Start() (wait func() error, err error) {
	return b.start(b.db)
}
