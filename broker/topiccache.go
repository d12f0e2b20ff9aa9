package broker

import (
	"context"
	"sync"
	"time"

	"github.com/floe-io/floe/coordapi"
)

// topicTTL is how long the read path trusts a cached topic: a deleted or
// altered topic is seen by fetches within it. Produce always asks the
// coordinator, since configs there decide what is accepted and indexed.
const topicTTL = time.Second

// topicCache caches topic metadata for the read path (Fetch), so that a
// tailing consumer's fetch needs no coordinator round trip.
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
