package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// AlterShareGroupOffsets: v0 (KIP-932). Each named partition of an Empty
// share group starts over at its StartOffset (its in-flight state
// forgotten); the group is created when it does not exist. A group with
// members is NON_EMPTY_GROUP, an unknown topic or partition
// UNKNOWN_TOPIC_OR_PARTITION. With ACLs it needs GROUP READ (else
// GROUP_AUTHORIZATION_FAILED for the whole request) and TOPIC READ on
// each topic (else TOPIC_AUTHORIZATION_FAILED for its partitions), as
// Kafka's KafkaApis. Options.ShareGroupsDisabled hides it.
func init() { register(kmsg.AlterShareGroupOffsets, 0, 0, (*Broker).handleAlterShareGroupOffsets) }

func (b *Broker) handleAlterShareGroupOffsets(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.AlterShareGroupOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.AlterShareGroupOffsetsResponse)
	// topicAnswer answers every partition of t with code.
	topicAnswer := func(t kmsg.AlterShareGroupOffsetsRequestTopic, code int16) kmsg.AlterShareGroupOffsetsResponseTopic {
		rt := kmsg.NewAlterShareGroupOffsetsResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewAlterShareGroupOffsetsResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, code
			rt.Partitions = append(rt.Partitions, rp)
		}
		return rt
	}
	fail := func(code int16) kmsg.Response {
		resp.ErrorCode = code
		for _, t := range req.Topics {
			resp.Topics = append(resp.Topics, topicAnswer(t, code))
		}
		return resp
	}
	if !b.authorized(r, kmsg.ACLOperationRead, kmsg.ACLResourceTypeGroup, req.GroupID) {
		return fail(kerr.GroupAuthorizationFailed.Code), nil
	}
	if code := b.groupsError(); code != 0 {
		return fail(code), nil
	}
	sub := *req
	var denied []kmsg.AlterShareGroupOffsetsResponseTopic
	sub.Topics, denied = splitReadable(b, r, req.Topics, func(t kmsg.AlterShareGroupOffsetsRequestTopic) string { return t.Topic }, topicAnswer)
	gr, err := b.groups.AlterShareGroupOffsets(ctx, &sub)
	if err != nil {
		return fail(b.groupsFailed("AlterShareGroupOffsets", err)), nil
	}
	gr.Topics = append(gr.Topics, denied...)
	return gr, nil
}
