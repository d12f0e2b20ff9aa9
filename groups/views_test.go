package groups

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-io/floe/coordapi"
)

// viewTopics is a fakeTopics that also resolves "base/KEY" to a view of a
// base it lists, as the coordinator does (a TopicResolver).
type viewTopics struct{ fakeTopics }

func (v *viewTopics) Topic(_ context.Context, name string) (coordapi.Topic, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if t, ok := v.topics[name]; ok {
		return t, nil
	}
	base, key, ok := strings.Cut(name, "/")
	bt, found := v.topics[base]
	if !ok || !found {
		return coordapi.Topic{}, fmt.Errorf("topic %q: %w", name, kerr.UnknownTopicOrPartition)
	}
	return coordapi.Topic{ID: coordapi.ViewTopicID(bt.ID, []byte(key)), Name: name, Partitions: bt.Partitions,
		View: &coordapi.TopicView{BaseID: bt.ID, BaseName: base, Key: []byte(key)}}, nil
}

// TestConsumerSubscribesToView: a KIP-848 member subscribed to a view by
// name is assigned the view's partitions under the view's id (the broker
// fetches the view by it); a name that is neither a topic nor a view
// assigns nothing.
func TestConsumerSubscribesToView(t *testing.T) {
	vt := &viewTopics{}
	h := newHarness(t, func(o *Options) { o.Topics = vt })
	vt.set("telemetry", 2)
	view, _ := vt.Topic(context.Background(), "telemetry/CC54 RYD")

	tests := []struct {
		name   string
		topics []string
		want   int // partitions assigned
	}{
		{"a view", []string{"telemetry/CC54 RYD"}, 2},
		{"no such base", []string{"nope/CC54 RYD"}, 0},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			group := fmt.Sprintf("g%d", i)
			resp := h.hb(joinHB(group, "m1", tc.topics...))
			wantHB(t, "join", resp, nil, 1)
			got := assigned(resp)
			if got.Count() != tc.want {
				t.Fatalf("assigned %v, want %d partitions", got, tc.want)
			}
			if tc.want > 0 && len(got[topicID(view.ID)]) != tc.want {
				t.Errorf("assigned %v, want the view's id %x", got, view.ID[:4])
			}
		})
	}
}
