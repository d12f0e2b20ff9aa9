package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeShareGroupOffsets: v0-v1 (KIP-932; v1 adds Lag, KIP-1226). Each
// share-partition's start offset (SPSO), leader epoch and lag (the high
// watermark, or the last stable offset under read_committed, less SPSO
// and the records completed past it); -1s for a partition without share
// state. A group's null Topics asks for every share-partition it has. With
// ACLs each group needs GROUP DESCRIBE (GROUP_AUTHORIZATION_FAILED) and
// each topic TOPIC DESCRIBE: a named topic without it is answered
// TOPIC_AUTHORIZATION_FAILED per partition, and left out of an
// all-topics answer, as Kafka's KafkaApis. Options.ShareGroupsDisabled
// hides it.
func init() {
	register(kmsg.DescribeShareGroupOffsets, 0, 1, (*Broker).handleDescribeShareGroupOffsets)
}

func (b *Broker) handleDescribeShareGroupOffsets(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.DescribeShareGroupOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeShareGroupOffsetsResponse)
	check := b.topicDescribeCheck(r)
	// The groups and topics the principal may describe go to the
	// coordinator in one request; denied is each group's denied topics.
	sub := *req
	sub.Groups = nil
	asked := make([]bool, len(req.Groups))
	denied := make([][]kmsg.DescribeShareGroupOffsetsRequestGroupTopic, len(req.Groups))
	for i, g := range req.Groups {
		if !b.authorized(r, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeGroup, g.GroupID) {
			continue
		}
		sg := g
		if g.Topics != nil {
			sg.Topics = []kmsg.DescribeShareGroupOffsetsRequestGroupTopic{}
			for _, t := range g.Topics {
				if check(t.Topic) {
					sg.Topics = append(sg.Topics, t)
				} else {
					denied[i] = append(denied[i], t)
				}
			}
		}
		asked[i] = true
		sub.Groups = append(sub.Groups, sg)
	}
	code := b.groupsError()
	var answered []kmsg.DescribeShareGroupOffsetsResponseGroup
	if code == 0 && len(sub.Groups) > 0 {
		gr, err := b.groups.DescribeShareGroupOffsets(ctx, &sub)
		if err != nil {
			code = b.groupsFailed("DescribeShareGroupOffsets", err)
		} else {
			answered = gr.Groups
			resp.ThrottleMillis = gr.ThrottleMillis
		}
	}
	k := 0
	for i, g := range req.Groups {
		var dg kmsg.DescribeShareGroupOffsetsResponseGroup
		switch {
		case !asked[i]:
			dg = kmsg.NewDescribeShareGroupOffsetsResponseGroup()
			dg.GroupID, dg.ErrorCode = g.GroupID, kerr.GroupAuthorizationFailed.Code
		case k < len(answered) && answered[k].GroupID == g.GroupID:
			dg = answered[k]
			k++
			if g.Topics == nil {
				dg.Topics = filterDescribedTopics(dg.Topics, check)
			}
			for _, t := range denied[i] {
				dg.Topics = append(dg.Topics, deniedShareOffsetsTopic(t))
			}
		default:
			dg = kmsg.NewDescribeShareGroupOffsetsResponseGroup()
			dg.GroupID, dg.ErrorCode = g.GroupID, code
			if code == 0 {
				dg.ErrorCode = kerr.UnknownServerError.Code // not answered
			}
		}
		resp.Groups = append(resp.Groups, dg)
	}
	return resp, nil
}

// filterDescribedTopics keeps the topics the principal may describe.
func filterDescribedTopics(ts []kmsg.DescribeShareGroupOffsetsResponseGroupTopic, check func(string) bool) []kmsg.DescribeShareGroupOffsetsResponseGroupTopic {
	out := ts[:0]
	for _, t := range ts {
		if check(t.Topic) {
			out = append(out, t)
		}
	}
	return out
}

// deniedShareOffsetsTopic answers a named topic the principal may not
// describe: TOPIC_AUTHORIZATION_FAILED for each of its partitions.
func deniedShareOffsetsTopic(t kmsg.DescribeShareGroupOffsetsRequestGroupTopic) kmsg.DescribeShareGroupOffsetsResponseGroupTopic {
	rt := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopic()
	rt.Topic = t.Topic
	rt.Partitions = []kmsg.DescribeShareGroupOffsetsResponseGroupTopicPartition{}
	for _, p := range t.Partitions {
		rp := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopicPartition()
		rp.Partition, rp.StartOffset, rp.LeaderEpoch = p, -1, -1
		rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
		rt.Partitions = append(rt.Partitions, rp)
	}
	return rt
}
