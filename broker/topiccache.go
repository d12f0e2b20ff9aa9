package broker

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

// topicCache caches topic metadata for Produce and Fetch, so that neither a
// producer's request nor a tailing consumer's fetch waits for a coordinator
// round trip (Produce's would hold up the connection's read loop, and with
// it every pipelined request behind it). A stale entry is safe: the
// coordinator checks every committed batch against its own topic state
// (a deleted topic, a partition out of range, an index turned on), and the
// broker drops the entry when a commit says so.
type topicCache struct {
	coord coordapi.Coordinator
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

func newTopicCache(coord coordapi.Coordinator) *topicCache {
	tc := &topicCache{coord: coord, now: time.Now}
	tc.mu.byName = make(map[string]cachedTopic)
	tc.mu.byID = make(map[coordapi.TopicID]cachedTopic)
	return tc
}

func (tc *topicCache) put(t coordapi.Topic) {
	ct := cachedTopic{t, tc.now().Add(topicTTL)}
	tc.mu.Lock()
	tc.mu.byName[t.Name] = ct
	tc.mu.byID[t.ID] = ct
	tc.mu.Unlock()
}

// invalidate drops the cached entries of the topics in ns (topic notices).
func (tc *topicCache) invalidate(ns []coordapi.TopicNotice) {
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

// byName returns the named topic; errors are not cached.
func (tc *topicCache) byName(ctx context.Context, name string) (coordapi.Topic, error) {
	tc.mu.Lock()
	ct, ok := tc.mu.byName[name]
	tc.mu.Unlock()
	if ok && tc.now().Before(ct.expires) {
		return ct.t, nil
	}
	t, err := tc.coord.Topic(ctx, name)
	if err == nil {
		tc.put(t)
	}
	return t, err
}

// byID returns the topic with id; errors are not cached.
func (tc *topicCache) byID(ctx context.Context, id coordapi.TopicID) (coordapi.Topic, error) {
	tc.mu.Lock()
	ct, ok := tc.mu.byID[id]
	tc.mu.Unlock()
	if ok && tc.now().Before(ct.expires) {
		return ct.t, nil
	}
	t, err := tc.coord.TopicByID(ctx, id)
	if err == nil {
		tc.put(t)
	}
	return t, err
}

// topicChanged drops a topic this broker just changed (deleted, altered,
// grown) from its cache, so that the broker's own next request sees the
// change without waiting for the coordinator's notice, which travels
// separately.
func (b *Broker) topicChanged(id coordapi.TopicID, name string) {
	b.topics.invalidate([]coordapi.TopicNotice{{ID: id, Name: name}})
}
