package broker

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-io/floe/coordapi"
)

// offsetsTopic is Kafka's internal topic of committed offsets. floe keeps
// offsets in the group coordinator, not in a log, but clients expect the
// topic to exist once a group coordinator was looked up, and to be marked
// internal in Metadata (regex subscriptions skip it). It is created empty,
// like Kafka creates it, on the first FindCoordinator for a group, and
// clients cannot produce to it.
const offsetsTopic = "__consumer_offsets"

// offsetsTopicPartitions is Kafka's offsets.topic.num.partitions default.
const offsetsTopicPartitions = 50

// isInternalTopic reports whether name is one of Kafka's internal topics.
func isInternalTopic(name string) bool { return name == offsetsTopic }

// ensureOffsetsTopic creates __consumer_offsets once; a failure is retried
// on the next FindCoordinator.
func (b *Broker) ensureOffsetsTopic(ctx context.Context) {
	if b.offsetsTopicReady.Load() {
		return
	}
	_, err := b.coord.CreateTopic(ctx, coordapi.CreateTopicRequest{
		Name: offsetsTopic, Partitions: offsetsTopicPartitions, ReplicationFactor: -1,
		Configs: map[string]string{"cleanup.policy": "compact"},
	})
	if err == nil || errors.Is(err, kerr.TopicAlreadyExists) {
		b.offsetsTopicReady.Store(true)
		return
	}
	b.log.Warn("create internal topic", "topic", offsetsTopic, "err", err)
}
