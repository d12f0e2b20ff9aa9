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
}

// topicSnapshot is the topic metadata at one moment.
type topicSnapshot struct {
	byName map[string]topicMeta
	byID   map[topicID]string
}

// topicCacheTTL bounds how stale the topic metadata behind a KIP-848
// heartbeat may be: new partitions and topics matching a subscription are
// picked up within it.
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
		// missed holds when each missing subscribed name last dropped
		// the snapshot (noteSubscribed).
		missed map[string]time.Time
	}
}

// maxSubscribedViews bounds the view names the topic cache resolves.
const maxSubscribedViews = 10000

// topicMissRefresh is how old a snapshot must be before a subscription to a
// name it lacks drops it: a consumer started right after its topic was
// created gets the topic's partitions in its first heartbeat's assignment,
// as Kafka's coordinator gives them, instead of waiting a heartbeat interval
// (5 s by default) for the next. A name that stays missing drops it again
// only after topicCacheTTL (missed), so members subscribed to a topic that
// does not exist, which some clients name in every heartbeat, list the
// topics no more often than the TTL did.
const topicMissRefresh = 50 * time.Millisecond

// maxMissed bounds the missing names the topic cache remembers; when full,
// it forgets them all.
const maxMissed = 1024

// noteSubscribed looks at the topic names a heartbeat subscribes to (sent
// when a member joins or changes its subscription). It drops the snapshot
// when it lacks one of them and is topicMissRefresh old (once per
// topicCacheTTL for a name that stays missing), and, with a
// TopicResolver, records the names with a '/' that it lacks, so that the
// next snapshot resolves them as views (dropping it when it recorded one).
func (gs *Groups) noteSubscribed(names []string) {
	_, resolver := gs.opts.Topics.(TopicResolver)
	c := &gs.topicCache
	c.mu.Lock()
	defer c.mu.Unlock()
	snap, now := c.mu.snap, time.Now()
	for _, n := range names {
		if snap == nil || now.Sub(c.mu.at) < topicMissRefresh {
			break
		}
		if _, ok := snap.byName[n]; ok {
			continue
		}
		if at, ok := c.mu.missed[n]; ok && now.Sub(at) < topicCacheTTL {
			continue
		}
		if c.mu.missed == nil || len(c.mu.missed) >= maxMissed {
			c.mu.missed = make(map[string]time.Time)
		}
		c.mu.missed[n] = now
		c.mu.snap = nil
		break
	}
	for _, n := range names {
		if !resolver || !strings.Contains(n, "/") {
			continue
		}
		if _, ok := c.mu.views[n]; ok {
			continue
		}
		if snap != nil {
			if _, ok := snap.byName[n]; ok {
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
				snap.byName[t.Name] = topicMeta{id: topicID(t.ID), partitions: t.Partitions}
				snap.byID[topicID(t.ID)] = t.Name
			}
		}
	}
	c.mu.at, c.mu.snap = now, snap
	return snap, nil
}
