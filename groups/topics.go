package groups

import (
	"context"
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
	}
	c.mu.at, c.mu.snap = now, snap
	return snap, nil
}
