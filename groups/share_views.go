package groups

import (
	"context"
	"fmt"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-io/floe/coordapi"
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

// shareViewCache keeps the views share groups read: a view's base and key
// never change (its id is derived from them), so entries are never stale.
type shareViewCache struct {
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
func (gs *Groups) shareDataOf(ctx context.Context, id topicID) (topicID, []byte, error) {
	v, ok, err := gs.shareViewOf(ctx, id)
	if !ok {
		return id, nil, err
	}
	return v.base, v.key, nil
}

// shareViewName is the name of view id, ok false when id is no view known.
func (gs *Groups) shareViewName(ctx context.Context, id topicID) (string, bool) {
	v, ok, _ := gs.shareViewOf(ctx, id)
	return v.name, ok
}

// shareViewOf returns view id, ok false when id is a topic's, or a view
// that cannot be resolved (then with the error). A view resolved is noted
// in the topic cache (noteSubscribed), so that the next snapshots name it
// even before a member subscribed to it heartbeats (after a restart).
func (gs *Groups) shareViewOf(ctx context.Context, id topicID) (shareView, bool, error) {
	if !coordapi.IsViewTopicID(coordapi.TopicID(id)) {
		return shareView{}, false, nil
	}
	c := &gs.shareViews
	c.mu.Lock()
	v, ok := c.m[id]
	c.mu.Unlock()
	if ok {
		return v, true, nil
	}
	var t coordapi.Topic
	var err error
	if r, ok := gs.opts.Topics.(TopicByIDResolver); ok {
		t, err = r.TopicByID(ctx, coordapi.TopicID(id))
	} else {
		t, err = gs.snapshotTopicByID(ctx, id)
	}
	if err != nil || t.View == nil {
		return shareView{}, false, err
	}
	v = shareView{name: t.Name, base: topicID(t.View.BaseID), baseName: t.View.BaseName, key: t.View.Key}
	c.mu.Lock()
	if c.m == nil {
		c.m = make(map[topicID]shareView)
	}
	if len(c.m) < maxShareViews {
		c.m[id] = v
	}
	c.mu.Unlock()
	gs.noteSubscribed([]string{t.Name})
	return v, true, nil
}

// snapshotTopicByID finds topic id in the topic snapshot, views noted by
// heartbeats included.
func (gs *Groups) snapshotTopicByID(ctx context.Context, id topicID) (coordapi.Topic, error) {
	snap, err := gs.topics(ctx)
	if err != nil {
		return coordapi.Topic{}, err
	}
	name, ok := snap.byID[id]
	if !ok {
		return coordapi.Topic{}, fmt.Errorf("topic %s: %w", coordapi.TopicID(id), kerr.UnknownTopicID)
	}
	m := snap.byName[name]
	return coordapi.Topic{ID: coordapi.TopicID(id), Name: name, Partitions: m.partitions, View: m.view}, nil
}
