package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DeleteShareGroupOffsets: v0 (KIP-932). An Empty share group's state of
// each named topic is dropped, so that the next assignment starts its
// partitions by share.auto.offset.reset. An unknown group is
// GROUP_ID_NOT_FOUND, one with members NON_EMPTY_GROUP; a topic that does
// not exist or has no share state is UNKNOWN_TOPIC_OR_PARTITION. With ACLs
// it needs GROUP DELETE (else GROUP_AUTHORIZATION_FAILED for the whole
// request) and TOPIC READ on each topic (else TOPIC_AUTHORIZATION_FAILED
// for it), as Kafka's KafkaApis. Options.ShareGroupsDisabled hides it.
func init() { register(kmsg.DeleteShareGroupOffsets, 0, 0, (*Broker).handleDeleteShareGroupOffsets) }

func (b *Broker) handleDeleteShareGroupOffsets(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.DeleteShareGroupOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteShareGroupOffsetsResponse)
	topicAnswer := func(t kmsg.DeleteShareGroupOffsetsRequestTopic, code int16) kmsg.DeleteShareGroupOffsetsResponseTopic {
		rt := kmsg.NewDeleteShareGroupOffsetsResponseTopic()
		rt.Topic, rt.ErrorCode = t.Topic, code
		return rt
	}
	fail := func(code int16) kmsg.Response {
		resp.ErrorCode = code
		for _, t := range req.Topics {
			resp.Topics = append(resp.Topics, topicAnswer(t, code))
		}
		return resp
	}
	if !b.authorized(r, kmsg.ACLOperationDelete, kmsg.ACLResourceTypeGroup, req.GroupID) {
		return fail(kerr.GroupAuthorizationFailed.Code), nil
	}
	if code := b.groupsError(); code != 0 {
		return fail(code), nil
	}
	sub := *req
	var denied []kmsg.DeleteShareGroupOffsetsResponseTopic
	sub.Topics, denied = splitReadable(b, r, req.Topics, func(t kmsg.DeleteShareGroupOffsetsRequestTopic) string { return t.Topic }, topicAnswer)
	gr, err := b.groups.DeleteShareGroupOffsets(ctx, &sub)
	if err != nil {
		return fail(b.groupsFailed("DeleteShareGroupOffsets", err)), nil
	}
	gr.Topics = append(gr.Topics, denied...)
	return gr, nil
}
