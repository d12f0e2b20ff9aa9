package sharegroups

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/groups/share"
)

// Share groups on hierarchical views (docs/design/share-groups.md): a group
// subscribed to "base/KEY" is assigned the view's partitions under the
// view's topic id, and its share-partitions are keyed by it, but their
// records are the base topic's. Everything that reads the log for a
// share-partition (where it starts, the batches it acquires, its lag, the
// commits that wake its held acquisitions) goes to the base partition:
//
//	share-partition (view id, p) ─▶ shareDataOf ─▶ (base id, p) + key
//	ShareAcquire acquires the base partition's offsets; the broker cuts the
//	other keys' records out of the batches (filterView), and the client
//	acknowledges the offsets missing from them as gaps.

// TopicByIDResolver resolves a topic by id, hierarchical views included
// (their ids are derived, coordapi.ViewTopicID, so they cannot be listed);
// *coordinator.Coordinator implements it. Share groups find a view's base
// topic through it; without it only the views in the topic snapshot (those
// a member subscribed to by name since the last start) are known.
type TopicByIDResolver interface {
	TopicByID(ctx context.Context, id coordapi.TopicID) (coordapi.Topic, error)
}

// shareView is a view share groups read: its name, and where its records
// are, its base topic and its key.
type shareView struct {
	name     string
	base     topicID
	baseName string
	key      []byte
}

// viewCache keeps the views share groups read: a view's base and key
// never change (its id is derived from them), so entries are never stale.
type viewCache struct {
	mu sync.Mutex
	m  map[topicID]shareView
}

// maxShareViews bounds the views cached; past it lookups go to the
// resolver every time.
const maxShareViews = 10000

// shareDataOf returns the topic holding the records of share-partitions of
// topic id, and the key they are cut to: id itself and nil for a topic,
// the base topic and the view's key for a view. A view that cannot be
// resolved (its base deleted, the resolver failing) answers its own id and
// the error: reading the log under it then fails with the topic's error,
// which the client is shown.
func (c *Coordinator) shareDataOf(ctx context.Context, id topicID) (topicID, []byte, error) {
	v, ok, err := c.shareViewOf(ctx, id)
	if !ok {
		return id, nil, err
	}
	return v.base, v.key, nil
}

// shareViewName is the name of view id, ok false when id is no view known.
func (c *Coordinator) shareViewName(ctx context.Context, id topicID) (string, bool) {
	v, ok, _ := c.shareViewOf(ctx, id)
	return v.name, ok
}

// shareViewOf returns view id, ok false when id is a topic's, or a view
// that cannot be resolved (then with the error). A view resolved is noted
// in the Host's topic cache (Host.NoteSubscribed), so that the next snapshots name it
// even before a member subscribed to it heartbeats (after a restart).
func (c *Coordinator) shareViewOf(ctx context.Context, id topicID) (shareView, bool, error) {
	if !coordapi.IsViewTopicID(coordapi.TopicID(id)) {
		return shareView{}, false, nil
	}
	vc := &c.views
	vc.mu.Lock()
	v, ok := vc.m[id]
	vc.mu.Unlock()
	if ok {
		return v, true, nil
	}
	var t coordapi.Topic
	var err error
	if r := c.opts.Resolver; r != nil {
		t, err = r.TopicByID(ctx, coordapi.TopicID(id))
	} else {
		t, err = c.snapshotTopicByID(ctx, id)
	}
	if err != nil || t.View == nil {
		return shareView{}, false, err
	}
	v = shareView{name: t.Name, base: topicID(t.View.BaseID), baseName: t.View.BaseName, key: t.View.Key}
	vc.mu.Lock()
	if vc.m == nil {
		vc.m = make(map[topicID]shareView)
	}
	if len(vc.m) < maxShareViews {
		vc.m[id] = v
	}
	vc.mu.Unlock()
	c.host.NoteSubscribed([]string{t.Name})
	return v, true, nil
}

// snapshotTopicByID finds topic id in the topic snapshot, views noted by
// heartbeats included.
func (c *Coordinator) snapshotTopicByID(ctx context.Context, id topicID) (coordapi.Topic, error) {
	snap, err := c.host.Topics(ctx)
	if err != nil {
		return coordapi.Topic{}, err
	}
	name, ok := snap.TopicName(coordapi.TopicID(id))
	if !ok {
		return coordapi.Topic{}, fmt.Errorf("topic %s: %w", coordapi.TopicID(id), kerr.UnknownTopicID)
	}
	m, _ := snap.Topic(name)
	return coordapi.Topic{ID: coordapi.TopicID(id), Name: name, Partitions: m.Partitions, View: m.View}, nil
}

// KeyBatchFinder finds the batches of a hierarchical topic's partition
// that hold one key, from its posting index; *coordinator.Coordinator and
// the shard router implement it. A share group on a view acquires through
// it: only the batches of the view's key, the offsets between them
// archived at once (share.Partition.Skip), so that neither the broker nor
// the client handles the other keys' records outside them.
type KeyBatchFinder interface {
	FindKeyBatches(ctx context.Context, req coordapi.FindKeyBatchesRequest) (coordapi.FindKeyBatchesResponse, error)
}

// shareAcquireKeyLocked acquires up to maxRecords records of part, the
// share-partition of a view of key on partition t.p of topic data, through
// the posting index: from the first acquirable offset, each batch holding
// the key in turn, the offsets before it that hold no batch of the key
// skipped (archived), then the batch acquired whole (or cut at maxRecords
// under record_limit); once every batch answered is acquired, the offsets
// after the last up to what the answer covers are skipped too. A batch in
// a tiered segment goes alone (the broker finds the batches inside the
// segment from the first acquired offset, within a bound), and the
// acquisition stops before a segment after other batches, as FindBatches
// answers a segment alone. posted is false when the postings cannot
// answer (being built after hierarchical.enabled was turned on, or a
// coordinator without them): the caller acquires the base's batches then.
func (g *group) shareAcquireKeyLocked(ctx context.Context, kf KeyBatchFinder, part *share.Partition, t tp, data topicID, key []byte,
	req *coordapi.ShareAcquireRequest, maxRecords, maxBytes int, readCommitted bool, nowMs int64,
	note func(tp, share.Result)) (acquired []share.AcquiredRecords, out coordapi.ShareAcquired, posted bool) {
	out.HighWatermark, out.LastStableOffset, out.LogStartOffset = -1, -1, -1
	find := func() (coordapi.FindKeyBatchesResponse, error) {
		return kf.FindKeyBatches(ctx, coordapi.FindKeyBatchesRequest{
			TopicID: coordapi.TopicID(data), Partition: t.p, Key: key, Offset: part.NextOffset(),
			MaxBytes: int32(min(maxBytes, 1<<31-1)), ReadCommitted: readCommitted,
		})
	}
	found, err := find()
	if errors.Is(err, kerr.OffsetOutOfRange) {
		// As shareAcquirePartitionLocked: archive what the log start
		// passed and look again.
		st, serr := g.c.opts.Partitions.PartitionState(ctx, coordapi.TopicID(data), t.p)
		if serr != nil {
			out.ErrorCode = errorCodeOf(serr)
			return nil, out, true
		}
		out.PartitionState = st
		if st.LogStartOffset <= part.Start() {
			return nil, out, true // past the high watermark: nothing yet
		}
		note(t, part.AdvanceLogStart(st.LogStartOffset))
		found, err = find()
	}
	switch {
	case errors.Is(err, errors.ErrUnsupported):
		return nil, out, false
	case errors.Is(err, kerr.OffsetOutOfRange):
		return nil, out, true
	case err != nil:
		out.ErrorCode = errorCodeOf(err)
		return nil, out, true
	case !found.Ready:
		return nil, out, false
	}
	out.PartitionState = found.PartitionState
	if found.LogStartOffset > part.Start() {
		note(t, part.AdvanceLogStart(found.LogStartOffset))
	}
	var batches []coordapi.BatchCoord
	remaining := maxRecords
	cursor := part.NextOffset()
	all := true // every batch answered was acquired
	for _, kb := range found.Batches {
		first, last := max(kb.BaseOffset, cursor), min(kb.LastOffset, found.Through-1)
		if last < first {
			continue
		}
		if remaining <= 0 || len(batches) > 0 && (kb.Coord.Segment || batches[0].Segment && kb.Coord != batches[0]) {
			all = false
			break
		}
		if first > cursor {
			note(t, part.Skip(cursor, first-1))
		}
		ar := share.AcquireRequest{Member: req.Member, Via: req.Via, NowMs: nowMs, MaxRecords: remaining, Bound: last + 1}
		if req.Mode != coordapi.ShareAcquireRecordLimit {
			ar.BatchLast = func(int64) int64 { return last } // the key's batch whole
		}
		res := part.Acquire(ar)
		note(t, res)
		for _, a := range res.Acquired {
			remaining -= int(a.Last - a.First + 1)
		}
		for _, a := range res.Acquired {
			if n := len(acquired); n > 0 && acquired[n-1].Last+1 == a.First && acquired[n-1].DeliveryCount == a.DeliveryCount {
				acquired[n-1].Last = a.Last // one run across batches
				continue
			}
			acquired = append(acquired, a)
		}
		if len(res.Acquired) > 0 && (len(batches) == 0 || batches[len(batches)-1] != kb.Coord) {
			batches = append(batches, kb.Coord)
		}
		if part.NextOffset() <= last {
			// Not all of it could be acquired (the record lock window is
			// full, or maxRecords cut it): the rest waits.
			all = false
			break
		}
		cursor = last + 1
		if kb.Coord.Segment {
			all = false // a segment's batch goes alone
			break
		}
	}
	if all && cursor < found.Through {
		note(t, part.Skip(cursor, found.Through-1))
	}
	if len(acquired) == 0 {
		return nil, out, true
	}
	for _, a := range acquired {
		out.Acquired = append(out.Acquired, coordapi.ShareAcquiredRecords{First: a.First, Last: a.Last, DeliveryCount: a.DeliveryCount})
	}
	if req.Mode == coordapi.ShareAcquireBatchOptimized && req.BatchSize > 0 {
		out.Acquired = splitAcquired(out.Acquired, int64(req.BatchSize))
	}
	out.Batches = batches
	if readCommitted {
		out.Aborted = found.Aborted
	}
	return acquired, out, true
}
