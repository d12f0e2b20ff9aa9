package topiccache

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-io/floe/coordapi"
)

// countingLookup answers from topics and counts its calls.
type countingLookup struct {
	topics map[string]coordapi.Topic
	calls  int
}

func (l *countingLookup) Topic(_ context.Context, name string) (coordapi.Topic, error) {
	l.calls++
	if t, ok := l.topics[name]; ok {
		return t, nil
	}
	return coordapi.Topic{}, kerr.UnknownTopicOrPartition
}

func (l *countingLookup) TopicByID(_ context.Context, id coordapi.TopicID) (coordapi.Topic, error) {
	l.calls++
	for _, t := range l.topics {
		if t.ID == id {
			return t, nil
		}
	}
	return coordapi.Topic{}, kerr.UnknownTopicID
}

// TestCache: a topic is looked up once, by name or id, until its TTL runs
// out or a notice drops it; errors are not cached.
func TestCache(t *testing.T) {
	ctx := context.Background()
	tp := coordapi.Topic{Name: "t", ID: coordapi.TopicID{1}, Partitions: 3}
	l := &countingLookup{topics: map[string]coordapi.Topic{"t": tp}}
	now := time.Unix(1000, 0)
	c := New(l, Options{Now: func() time.Time { return now }})

	lookup := func(byID bool, wantCalls int) {
		t.Helper()
		var (
			got coordapi.Topic
			err error
		)
		if byID {
			got, err = c.ByID(ctx, tp.ID)
		} else {
			got, err = c.ByName(ctx, tp.Name)
		}
		if err != nil || got.ID != tp.ID {
			t.Fatalf("lookup: %+v, %v", got, err)
		}
		if l.calls != wantCalls {
			t.Fatalf("%d coordinator calls, want %d", l.calls, wantCalls)
		}
	}
	lookup(false, 1)
	lookup(false, 1) // cached
	lookup(true, 1)  // cached by id too
	now = now.Add(topicTTL)
	lookup(true, 2) // expired
	c.Invalidate([]coordapi.TopicNotice{{Name: "t"}})
	lookup(true, 3) // dropped by name, and so by id
	c.Invalidate([]coordapi.TopicNotice{{ID: tp.ID}})
	lookup(true, 4) // dropped by id

	for range 2 {
		if _, err := c.ByName(ctx, "missing"); !errors.Is(err, kerr.UnknownTopicOrPartition) {
			t.Fatalf("missing topic: %v", err)
		}
	}
	if l.calls != 6 {
		t.Errorf("%d coordinator calls, want 6: errors are not cached", l.calls)
	}
}
