// Package topiccache caches topic metadata by name and by id for the
// broker's requests, so that neither a producer's request nor a tailing
// consumer's fetch waits for a coordinator round trip. The coordinator's
// topic notices drop what changed (Invalidate); a TTL bounds what a lost
// notice can leave stale.
package topiccache

import (
	"context"
	"sync"
	"time"

	"github.com/floe-io/floe/coordapi"
)

// topicTTL is how long a cached topic is trusted at most. The coordinator's
// topic notices drop a created, deleted or altered topic at once; the TTL
// bounds what a lost notice (a NATS disconnect) can leave stale.
const topicTTL = time.Second

// Cache caches topic metadata for Produce and Fetch, so that neither a
// producer's request nor a tailing consumer's fetch waits for a coordinator
// round trip (Produce's would hold up the connection's read loop, and with
// it every pipelined request behind it). A stale entry is safe: the
// coordinator checks every committed batch against its own topic state
// (a deleted topic, a partition out of range, an index turned on), and the
// broker drops the entry when a commit says so. It is safe for concurrent
// use.
type Cache struct {
	coord Lookup
	now   func() time.Time
	mu    struct {
		sync.Mutex
		byName map[string]cachedTopic
		byID   map[coordapi.TopicID]cachedTopic
	}
}

type cachedTopic struct {
	t       coordapi.Topic
	expires time.Time
}

// Lookup is where a Cache looks up the topics it does not hold: the
// coordinator (coordapi.Coordinator implements it).
type Lookup interface {
	Topic(ctx context.Context, name string) (coordapi.Topic, error)
	TopicByID(ctx context.Context, id coordapi.TopicID) (coordapi.Topic, error)
}

// Options configure a Cache.
type Options struct {
	// Now is the clock entries expire by. Default: time.Now.
	Now func() time.Time
}

// New returns an empty Cache that looks topics up in coord.
func New(coord Lookup, opts Options) *Cache {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	tc := &Cache{coord: coord, now: opts.Now}
	tc.mu.byName = make(map[string]cachedTopic)
	tc.mu.byID = make(map[coordapi.TopicID]cachedTopic)
	return tc
}

// Put caches t, as a fresh answer of the coordinator's.
func (tc *Cache) Put(t coordapi.Topic) {
	ct := cachedTopic{t, tc.now().Add(topicTTL)}
	tc.mu.Lock()
	tc.mu.byName[t.Name] = ct
	tc.mu.byID[t.ID] = ct
	tc.mu.Unlock()
}

// Invalidate drops the cached entries of the topics in ns (topic notices,
// or a change this broker just made).
func (tc *Cache) Invalidate(ns []coordapi.TopicNotice) {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	for _, n := range ns {
		if ct, ok := tc.mu.byName[n.Name]; ok {
			delete(tc.mu.byID, ct.t.ID)
		}
		delete(tc.mu.byName, n.Name)
		delete(tc.mu.byID, n.ID)
	}
}

// ByName returns the named topic; errors are not cached.
func (tc *Cache) ByName(ctx context.Context, name string) (coordapi.Topic, error) {
	tc.mu.Lock()
	ct, ok := tc.mu.byName[name]
	tc.mu.Unlock()
	if ok && tc.now().Before(ct.expires) {
		return ct.t, nil
	}
	t, err := tc.coord.Topic(ctx, name)
	if err == nil {
		tc.Put(t)
	}
	return t, err
}

// ByID returns the topic with id; errors are not cached.
func (tc *Cache) ByID(ctx context.Context, id coordapi.TopicID) (coordapi.Topic, error) {
	tc.mu.Lock()
	ct, ok := tc.mu.byID[id]
	tc.mu.Unlock()
	if ok && tc.now().Before(ct.expires) {
		return ct.t, nil
	}
	t, err := tc.coord.TopicByID(ctx, id)
	if err == nil {
		tc.Put(t)
	}
	return t, err
}
