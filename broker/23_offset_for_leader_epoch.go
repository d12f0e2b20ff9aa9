package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/coordapi"
)

// OffsetForLeaderEpoch: v0-v4. v1+ returns the leader epoch; v2+ fences on
// the current leader epoch; v3+ carries a replica id (ignored: there are no
// followers); v4+ flexible.
//
// Every batch of a diskless partition carries the one fixed leaderEpoch and
// the log is never truncated, so the epoch history is a single entry
// starting at the log start: the end offset of the current epoch is the
// high watermark (the log end), an older epoch ends where the current one
// starts, and a newer or undefined epoch is unknown (-1/-1), as Kafka
// answers.
func init() { register(kmsg.OffsetForLeaderEpoch, 0, 4, (*Broker).handleOffsetForLeaderEpoch) }

func (b *Broker) handleOffsetForLeaderEpoch(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.OffsetForLeaderEpochRequest)
	resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	topics := make(map[string]topicLookup)
	for _, rt := range req.Topics {
		st := kmsg.NewOffsetForLeaderEpochResponseTopic()
		st.Topic = rt.Topic
		tl := b.lookupAuthorized(ctx, r, topics, kmsg.ACLOperationDescribe, rt.Topic)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			sp.Partition = rp.Partition
			switch {
			case tl.err != nil:
				sp.ErrorCode = coordapi.ErrorCode(tl.err)
			case rp.Partition < 0 || rp.Partition >= tl.t.Partitions:
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case req.Version >= 2 && checkLeaderEpoch(rp.CurrentLeaderEpoch) != nil:
				sp.ErrorCode = checkLeaderEpoch(rp.CurrentLeaderEpoch).Code
			case rp.LeaderEpoch < 0 || rp.LeaderEpoch > leaderEpoch:
				// Undefined or newer than any epoch we have: -1/-1.
			default:
				ps, err := b.coord.PartitionState(ctx, dataID(tl.t), rp.Partition)
				if err != nil {
					sp.ErrorCode = coordapi.ErrorCode(byName(err))
					break
				}
				sp.LeaderEpoch = rp.LeaderEpoch
				if rp.LeaderEpoch == leaderEpoch {
					sp.EndOffset = ps.HighWatermark
				} else {
					// An epoch older than the first one ends where the
					// first one starts.
					sp.EndOffset = ps.LogStartOffset
				}
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}
