package coordinator

import (
	"context"

	"github.com/floe-io/floe/coordapi"
)

// WatermarkQuery asks HighWatermarks for one partition's high watermark.
type WatermarkQuery struct {
	Topic     string
	Partition int32
	// TopicID, when not zero, must be the topic's id: a topic recreated
	// since is not found.
	TopicID coordapi.TopicID
	// HWM is the answer, valid when Found; LSO is the partition's last
	// stable offset (the bound of share groups reading read_committed).
	HWM   int64
	LSO   int64
	Found bool
	// Elsewhere says the partition exists but another coordinator shard
	// owns it (its high watermark is there); TopicID is then set to the
	// topic's id, for the call that asks that shard.
	Elsewhere bool
}

// HighWatermarks answers each query in qs in place, read from memory, for
// the consumer lag gauges (service.Service). It holds mu for reading for a
// map lookup per query and allocates nothing, so that a collection does not
// hold up the commits.
func (c *Coordinator) HighWatermarks(ctx context.Context, qs []WatermarkQuery) error {
	if err := c.enter(ctx); err != nil {
		return err
	}
	defer c.leave()
	c.mu.RLock()
	defer c.mu.RUnlock()
	for i := range qs {
		q := &qs[i]
		t := c.mu.topicsByName[q.Topic]
		exists := t != nil && q.Partition >= 0 && int(q.Partition) < len(t.parts) &&
			(q.TopicID == coordapi.TopicID{} || q.TopicID == t.id)
		owned := exists && c.owns(t.id, q.Partition) // another shard's: not the empty copy's 0
		q.Found, q.Elsewhere = owned, exists && !owned
		switch {
		case owned:
			q.HWM, q.LSO = t.parts[q.Partition].hwm, t.parts[q.Partition].lso()
		case q.Elsewhere:
			q.TopicID = t.id
		}
	}
	return nil
}
