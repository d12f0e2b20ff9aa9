package coordinator

import (
	"context"

	"github.com/floe-io/floe/coordapi"
)

// TopicWatermarks is one topic's id and its partitions' high watermarks.
type TopicWatermarks struct {
	ID  coordapi.TopicID
	HWM []int64 // by partition
}

// HighWatermarks returns every topic's partitions' high watermarks by topic
// name, read from memory, for the consumer lag gauges (service.Service).
func (c *Coordinator) HighWatermarks(ctx context.Context) (map[string]TopicWatermarks, error) {
	if err := c.enter(ctx); err != nil {
		return nil, err
	}
	defer c.leave()
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make(map[string]TopicWatermarks, len(c.mu.topicsByID))
	for _, t := range c.mu.topicsByID {
		hwm := make([]int64, len(t.parts))
		for p := range t.parts {
			hwm[p] = t.parts[p].hwm
		}
		out[t.name] = TopicWatermarks{ID: t.id, HWM: hwm}
	}
	return out, nil
}
