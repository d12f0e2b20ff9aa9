package broker

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/coordapi"
)

// ListOffsets: v1-v8. v0 (the old multi-offset form) is not served. v2+
// isolation level; v4+ current leader epoch (fenced against leaderEpoch) and
// the leader epoch of the answer (leaderEpoch, -1 without an offset or for a
// partition never written); v5 only adds OFFSET_NOT_AVAILABLE, which floe
// never needs (no leader changes); v6+ flexible; v7 timestamp -3 (the offset
// of the largest timestamp, KIP-734); v8 timestamp -4 (the local log start,
// KIP-405), which is the log start here since object storage holds the whole
// log.
//
// ReplicaID is ignored: there are no followers, and the log end of a
// diskless partition is its high watermark. read_committed (isolation
// level 1) answers the last stable offset for -1 (latest), as Kafka: the
// first offset of the oldest open transaction, else the high watermark;
// and, as Kafka, no offset (-1) for any other lookup but -2 and -4 (the
// earliest) whose answer is at or past it.
func init() { register(kmsg.ListOffsets, 1, 8, (*Broker).handleListOffsets) }

func (b *Broker) handleListOffsets(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.ListOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)

	// Kafka answers INVALID_REQUEST for a partition asked for twice.
	type tp struct {
		topic     string
		partition int32
	}
	seen := make(map[tp]int)
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			seen[tp{rt.Topic, rp.Partition}]++
		}
	}

	topics := make(map[string]topicLookup)
	for _, rt := range req.Topics {
		st := kmsg.NewListOffsetsResponseTopic()
		st.Topic = rt.Topic
		tl := b.lookupAuthorized(ctx, r, topics, kmsg.ACLOperationDescribe, rt.Topic)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewListOffsetsResponseTopicPartition()
			sp.Partition = rp.Partition
			switch {
			case seen[tp{rt.Topic, rp.Partition}] > 1:
				sp.ErrorCode = kerr.InvalidRequest.Code
			case tl.err != nil:
				sp.ErrorCode = coordapi.ErrorCode(tl.err)
			case rp.Partition < 0 || rp.Partition >= tl.t.Partitions:
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			default:
				if err := checkLeaderEpoch(rp.CurrentLeaderEpoch); err != nil {
					sp.ErrorCode = err.Code
					break
				}
				offset, ts, epoch, ps, err := b.reads.ListOffset(ctx, dataID(tl.t), rp.Partition, rp.Timestamp)
				err = byName(err)
				if err == nil && req.IsolationLevel == 1 && offset >= 0 && rp.Timestamp != coordapi.TimestampEarliest && rp.Timestamp != coordapi.TimestampEarliestLocal {
					if ps == nil {
						var st coordapi.PartitionState
						st, err = b.coord.PartitionState(ctx, dataID(tl.t), rp.Partition)
						ps = &st
					}
					if err == nil && ps.LastStableOffset < offset {
						offset = ps.LastStableOffset
					}
					switch {
					case err != nil || rp.Timestamp == coordapi.TimestampLatest:
					case offset >= ps.LastStableOffset:
						// Kafka's allowed(): not yet fetchable by read_committed.
						offset, ts, epoch = -1, -1, -1
					}
				}
				if err != nil {
					sp.ErrorCode = coordapi.ErrorCode(err)
					break
				}
				sp.Offset, sp.Timestamp, sp.LeaderEpoch = offset, ts, epoch
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}

// checkLeaderEpoch fences a request's current leader epoch (-1 skips the
// check) against the fixed leaderEpoch, as Kafka's leader does: newer than
// ours is UNKNOWN_LEADER_EPOCH, older is FENCED_LEADER_EPOCH.
func checkLeaderEpoch(current int32) *kerr.Error {
	switch {
	case current == -1:
		return nil
	case current > leaderEpoch:
		return kerr.UnknownLeaderEpoch
	case current < leaderEpoch:
		return kerr.FencedLeaderEpoch
	}
	return nil
}

// topicLookup is a topic looked up once per request, or why it could not be.
type topicLookup struct {
	t   coordapi.Topic
	err error
}

// lookupTopic looks name up once per request, through the topic cache
// (as Produce and Fetch do: a consumer's ListOffsets after its Metadata
// needs no coordinator round trip for it); seen keeps the outcome for the
// request.
func (b *Broker) lookupTopic(ctx context.Context, seen map[string]topicLookup, name string) topicLookup {
	if tl, ok := seen[name]; ok {
		return tl
	}
	t, err := b.topics.ByName(ctx, name)
	tl := topicLookup{t: t, err: byName(err)}
	seen[name] = tl
	return tl
}

// byName maps a coordinator error for a topic named by the client: the
// topic may be deleted (and its id unknown) between the lookup by name and
// the next call, which Kafka reports as UNKNOWN_TOPIC_OR_PARTITION.
func byName(err error) error {
	if errors.Is(err, kerr.UnknownTopicID) {
		return fmt.Errorf("%w: %v", kerr.UnknownTopicOrPartition, err)
	}
	return err
}
