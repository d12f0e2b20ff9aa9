package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// offsetFetchAuthorized answers an OffsetFetch with ACLs on, as Kafka's
// KafkaApis does: a group r's principal may not DESCRIBE is answered
// GROUP_AUTHORIZATION_FAILED; of a group's named topics only those it may
// DESCRIBE are asked of the group coordinator, the others answered
// TOPIC_AUTHORIZATION_FAILED (after the authorized ones); an all-topics
// answer (null topics) keeps only the topics it may DESCRIBE.
func (b *Broker) offsetFetchAuthorized(ctx context.Context, r *request, req *kmsg.OffsetFetchRequest) *kmsg.OffsetFetchResponse {
	if req.Version < 8 {
		return b.offsetFetchOneGroup(ctx, r, req)
	}
	type plan struct {
		denied bool
		// deniedTopics are the named topics not asked.
		deniedTopics []kmsg.OffsetFetchRequestGroupTopic
	}
	plans := make([]plan, len(req.Groups))
	sub := *req
	sub.Groups = nil
	for i, g := range req.Groups {
		if !b.authorized(r, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeGroup, g.Group) {
			plans[i].denied = true
			continue
		}
		if g.Topics != nil {
			allowed := make([]kmsg.OffsetFetchRequestGroupTopic, 0, len(g.Topics))
			for _, t := range g.Topics {
				if b.authorizedTopic(r, kmsg.ACLOperationDescribe, t.Topic) {
					allowed = append(allowed, t)
				} else {
					plans[i].deniedTopics = append(plans[i].deniedTopics, t)
				}
			}
			g.Topics = allowed // empty, not nil: no topic, rather than all
		}
		sub.Groups = append(sub.Groups, g)
	}
	var gr *kmsg.OffsetFetchResponse
	if len(sub.Groups) > 0 {
		gr = b.offsetFetch(ctx, &sub)
	}
	resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	k := 0
	for i, g := range req.Groups {
		if plans[i].denied {
			sg := kmsg.NewOffsetFetchResponseGroup()
			sg.Group, sg.ErrorCode = g.Group, kerr.GroupAuthorizationFailed.Code
			resp.Groups = append(resp.Groups, sg)
			continue
		}
		sg := kmsg.NewOffsetFetchResponseGroup()
		sg.Group = g.Group
		if k < len(gr.Groups) && gr.Groups[k].Group == g.Group {
			sg = gr.Groups[k]
		} else {
			sg.ErrorCode = kerr.UnknownServerError.Code
		}
		k++
		if g.Topics == nil {
			kept := sg.Topics[:0]
			for _, t := range sg.Topics {
				if b.authorizedQuiet(r, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, t.Topic) {
					kept = append(kept, t)
				}
			}
			sg.Topics = kept
		}
		for _, t := range plans[i].deniedTopics {
			st := kmsg.NewOffsetFetchResponseGroupTopic()
			st.Topic = t.Topic
			for _, p := range t.Partitions {
				sp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
				sp.Partition, sp.Offset, sp.LeaderEpoch = p, -1, -1
				sp.Metadata = kmsg.StringPtr("")
				sp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				st.Partitions = append(st.Partitions, sp)
			}
			sg.Topics = append(sg.Topics, st)
		}
		resp.Groups = append(resp.Groups, sg)
	}
	return resp
}

// offsetFetchOneGroup is offsetFetchAuthorized for v0-v7 (one group).
func (b *Broker) offsetFetchOneGroup(ctx context.Context, r *request, req *kmsg.OffsetFetchRequest) *kmsg.OffsetFetchResponse {
	if !b.authorized(r, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeGroup, req.Group) {
		return offsetFetchFailed(req, kerr.GroupAuthorizationFailed.Code)
	}
	if req.Topics == nil {
		resp := b.offsetFetch(ctx, req)
		kept := resp.Topics[:0]
		for _, t := range resp.Topics {
			if b.authorizedQuiet(r, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, t.Topic) {
				kept = append(kept, t)
			}
		}
		resp.Topics = kept
		return resp
	}
	sub := *req
	sub.Topics = make([]kmsg.OffsetFetchRequestTopic, 0, len(req.Topics))
	var denied []kmsg.OffsetFetchRequestTopic
	for _, t := range req.Topics {
		if b.authorizedTopic(r, kmsg.ACLOperationDescribe, t.Topic) {
			sub.Topics = append(sub.Topics, t)
		} else {
			denied = append(denied, t)
		}
	}
	resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	if len(sub.Topics) > 0 {
		resp = b.offsetFetch(ctx, &sub)
	}
	for _, t := range denied {
		st := kmsg.NewOffsetFetchResponseTopic()
		st.Topic = t.Topic
		for _, p := range t.Partitions {
			sp := kmsg.NewOffsetFetchResponseTopicPartition()
			sp.Partition, sp.Offset, sp.LeaderEpoch = p, -1, -1
			sp.Metadata = kmsg.StringPtr("")
			sp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}
