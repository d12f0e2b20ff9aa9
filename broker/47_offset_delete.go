package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// OffsetDelete: v0. Deletes committed offsets of an Empty group, or of
// topics a consumer group does not subscribe to (GROUP_SUBSCRIBED_TO_TOPIC
// for those it does). Partitions of unknown topics are
// UNKNOWN_TOPIC_OR_PARTITION, as in Kafka; a group-level error (unknown
// group, a non-empty non-consumer group) is the only answer. Needs GROUP
// DELETE (GROUP_AUTHORIZATION_FAILED) and TOPIC READ per topic
// (TOPIC_AUTHORIZATION_FAILED), as Kafka.
func init() { register(kmsg.OffsetDelete, 0, 0, (*Broker).handleOffsetDelete) }

func (b *Broker) handleOffsetDelete(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.OffsetDeleteRequest)
	resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
	if !b.authorized(r, kmsg.ACLOperationDelete, kmsg.ACLResourceTypeGroup, req.Group) {
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp, nil
	}
	if code := b.groupsError(); code != 0 {
		resp.ErrorCode = code
		return resp, nil
	}
	topics := make([]string, len(req.Topics))
	parts := make([][]int32, len(req.Topics))
	for i, t := range req.Topics {
		topics[i] = t.Topic
		for _, p := range t.Partitions {
			parts[i] = append(parts[i], p.Partition)
		}
	}
	codes, keep, _ := b.knownPartitions(ctx, r, kmsg.ACLOperationRead, topics, parts)
	valid := *req
	var from []int
	valid.Topics, from = keptTopics(keep, func(i int, kept []int) kmsg.OffsetDeleteRequestTopic {
		vt := req.Topics[i]
		vt.Partitions = nil
		for _, j := range kept {
			vt.Partitions = append(vt.Partitions, req.Topics[i].Partitions[j])
		}
		return vt
	})
	gr, err := b.groups.OffsetDelete(ctx, &valid)
	if err != nil {
		resp.ErrorCode = b.groupsFailed("OffsetDelete", err)
		return resp, nil
	}
	if gr.ErrorCode != 0 {
		resp.ErrorCode = gr.ErrorCode
		return resp, nil
	}
	for k, t := range gr.Topics {
		for n, p := range t.Partitions {
			putAnswer(codes, keep, from, k, n, p.ErrorCode)
		}
	}
	for i, t := range req.Topics {
		st := kmsg.NewOffsetDeleteResponseTopic()
		st.Topic = t.Topic
		for j, p := range t.Partitions {
			sp := kmsg.NewOffsetDeleteResponseTopicPartition()
			sp.Partition = p.Partition
			sp.ErrorCode = codes[i][j]
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}
