package groups

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/floe-io/floe/coordapi"
)

// TopicLister lists the cluster's topics; *coordinator.Coordinator
// implements it. KIP-848 groups resolve subscriptions and assign partitions
// from it.
type TopicLister interface {
	Topics(ctx context.Context) ([]coordapi.Topic, error)
}

// TopicResolver resolves one topic by name, hierarchical views
// ("base/KEY") included, which Topics does not list;
// *coordinator.Coordinator implements it. A TopicLister that is also a
// TopicResolver lets KIP-848 groups subscribe to views by name.
type TopicResolver interface {
	Topic(ctx context.Context, name string) (coordapi.Topic, error)
}

// topicID is a topic's UUID, as KIP-848 requests name topics.
type topicID = [16]byte

// topicMeta is one topic as the assignors see it.
type topicMeta struct {
	id         topicID
	partitions int32
	// view is the base topic and key of a view; nil for a topic.
	view *coordapi.TopicView
}

// topicSnapshot is the topic metadata at one moment.
type topicSnapshot struct {
	byName map[string]topicMeta
	byID   map[topicID]string
}

// topicName is the name of topic id in snap; "" when snap is nil or does
// not know it (ConsumerGroupDescribe then shows the id alone).
func (snap *topicSnapshot) topicName(id topicID) string {
	if snap == nil {
		return ""
	}
	return snap.byID[id]
}

// topicCacheTTL bounds how stale the topic metadata behind a KIP-848
// heartbeat may be without topic notices (TopicSubscriber): new partitions
// and topics matching a subscription are picked up within it.
const topicCacheTTL = 500 * time.Millisecond

// topicCache keeps the last topic snapshot for topicCacheTTL.
type topicCache struct {
	mu struct {
		sync.Mutex
		at   time.Time
		snap *topicSnapshot
		// views are the names with a '/' KIP-848 members subscribed to
		// that Topics did not list: each snapshot resolves them
		// (TopicResolver) and holds those that are views. Names are only
		// added: a name no longer subscribed costs a lookup a snapshot.
		views map[string]struct{}
	}
}

// maxSubscribedViews bounds the view names the topic cache resolves.
const maxSubscribedViews = 10000

// TopicSubscriber is a TopicLister that also notifies every committed
// topic change; *coordinator.Coordinator implements it. With it the topic
// cache drops its snapshot at each change, so that a topic created, deleted
// or given partitions reaches the next heartbeat's assignment (a consumer
// started right after creating its topic gets its partitions in its first
// heartbeat, as from Kafka's coordinator) instead of up to topicCacheTTL
// and a heartbeat interval later.
type TopicSubscriber interface {
	SubscribeTopics(fn func([]coordapi.TopicNotice)) (cancel func())
}

// dropTopics drops the cached topic snapshot: the next use lists again.
func (gs *Groups) dropTopics() {
	c := &gs.topicCache
	c.mu.Lock()
	c.mu.snap = nil
	c.mu.Unlock()
}

// noteSubscribed records the names with a '/' in names that the current
// snapshot lacks, so that the next snapshot resolves them as views, and
// drops the snapshot when it recorded one. It does nothing without a
// TopicResolver.
func (gs *Groups) noteSubscribed(names []string) {
	if _, ok := gs.opts.Topics.(TopicResolver); !ok {
		return
	}
	c := &gs.topicCache
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range names {
		if !strings.Contains(n, "/") {
			continue
		}
		if _, ok := c.mu.views[n]; ok {
			continue
		}
		if c.mu.snap != nil {
			if _, ok := c.mu.snap.byName[n]; ok {
				continue // a real topic named with a '/'
			}
		}
		if len(c.mu.views) >= maxSubscribedViews {
			return
		}
		if c.mu.views == nil {
			c.mu.views = make(map[string]struct{})
		}
		c.mu.views[n] = struct{}{}
		c.mu.snap = nil
	}
}

// topics returns a recent topic snapshot.
func (gs *Groups) topics(ctx context.Context) (*topicSnapshot, error) {
	c := &gs.topicCache
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	if c.mu.snap != nil && now.Sub(c.mu.at) < topicCacheTTL {
		return c.mu.snap, nil
	}
	snap := &topicSnapshot{byName: map[string]topicMeta{}, byID: map[topicID]string{}}
	if gs.opts.Topics != nil {
		ts, err := gs.opts.Topics.Topics(ctx)
		if err != nil {
			return nil, err
		}
		for _, t := range ts {
			snap.byName[t.Name] = topicMeta{id: topicID(t.ID), partitions: t.Partitions}
			snap.byID[topicID(t.ID)] = t.Name
		}
		if r, ok := gs.opts.Topics.(TopicResolver); ok {
			for name := range c.mu.views {
				if _, listed := snap.byName[name]; listed {
					continue
				}
				t, err := r.Topic(ctx, name)
				if err != nil || t.View == nil {
					continue // not a view (now): subscribed to nothing
				}
				snap.byName[t.Name] = topicMeta{id: topicID(t.ID), partitions: t.Partitions, view: t.View}
				snap.byID[topicID(t.ID)] = t.Name
			}
		}
	}
	c.mu.at, c.mu.snap = now, snap
	return snap, nil
}
