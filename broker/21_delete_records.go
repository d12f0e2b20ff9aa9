package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/coordapi"
)

// DeleteRecords: v0-v2. v2+ flexible. Moves each partition's log start up
// to the given offset (-1 means the high watermark) and answers the new low
// watermark; an offset beyond the high watermark, or negative, is
// OFFSET_OUT_OF_RANGE. An offset below the log start changes nothing.
func init() { register(kmsg.DeleteRecords, 0, 2, (*Broker).handleDeleteRecords) }

func (b *Broker) handleDeleteRecords(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.DeleteRecordsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteRecordsResponse)
	topics := make(map[string]topicLookup)
	for _, rt := range req.Topics {
		st := kmsg.NewDeleteRecordsResponseTopic()
		st.Topic = rt.Topic
		tl := b.lookupAuthorized(ctx, r, topics, kmsg.ACLOperationDelete, rt.Topic)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewDeleteRecordsResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.LowWatermark = -1
			switch {
			case tl.err != nil:
				sp.ErrorCode = coordapi.ErrorCode(tl.err)
			case rp.Partition < 0 || rp.Partition >= tl.t.Partitions:
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			default:
				low, err := b.deleteRecords(ctx, tl, rp)
				if err != nil {
					sp.ErrorCode = coordapi.ErrorCode(err)
					break
				}
				sp.LowWatermark = low
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}

func (b *Broker) deleteRecords(ctx context.Context, tl topicLookup, rp kmsg.DeleteRecordsRequestTopicPartition) (int64, error) {
	if tl.t.View != nil {
		return -1, errViewWrite(tl.t) // a view's records are its base topic's
	}
	// The coordinator checks the offset against the high watermark under
	// the lock that commits take, so no commit slips in between.
	low, err := b.coord.DeleteRecords(ctx, tl.t.ID, rp.Partition, rp.Offset)
	b.reads.Forget(tl.t.ID, rp.Partition) // its log start moved
	if err != nil {
		return -1, byName(err)
	}
	return low, nil
}
