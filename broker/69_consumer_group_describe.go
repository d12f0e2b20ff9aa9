package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ConsumerGroupDescribe: v0-v1 (KIP-848). v1 adds each member's type. A
// classic or missing group is GROUP_ID_NOT_FOUND. With ACLs each group
// needs GROUP DESCRIBE (GROUP_AUTHORIZATION_FAILED), and a group whose
// members subscribe to or are assigned a topic the principal may not
// DESCRIBE is answered TOPIC_AUTHORIZATION_FAILED, as Kafka.
func init() { register(kmsg.ConsumerGroupDescribe, 0, 1, (*Broker).handleConsumerGroupDescribe) }

func (b *Broker) handleConsumerGroupDescribe(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.ConsumerGroupDescribeRequest)
	allowed, ok := b.authorizedGroups(r, kmsg.ACLOperationDescribe, req.Groups)
	sub := *req
	sub.Groups = allowed
	resp := req.ResponseKind().(*kmsg.ConsumerGroupDescribeResponse)
	var answered []kmsg.ConsumerGroupDescribeResponseGroup
	code := b.groupsError()
	if code == 0 && len(allowed) > 0 {
		gr, err := b.groups.ConsumerGroupDescribe(ctx, &sub)
		if err != nil {
			code = b.groupsFailed("ConsumerGroupDescribe", err)
		} else if b.acls == nil {
			return gr, nil
		} else {
			answered = gr.Groups
			resp.ThrottleMillis = gr.ThrottleMillis
		}
	}
	resp.Groups = describedGroups(b, r, describedGroup[kmsg.ConsumerGroupDescribeResponseGroup]{
		id:       func(g *kmsg.ConsumerGroupDescribeResponseGroup) string { return g.Group },
		ops:      func(g *kmsg.ConsumerGroupDescribeResponseGroup) *int32 { return &g.AuthorizedOperations },
		topicsOK: func(g *kmsg.ConsumerGroupDescribeResponseGroup) bool { return b.groupTopicsAuthorized(r, g) },
		failed: func(group string, code int16, msg *string) kmsg.ConsumerGroupDescribeResponseGroup {
			g := kmsg.NewConsumerGroupDescribeResponseGroup()
			g.Group, g.ErrorCode, g.ErrorMessage = group, code, msg
			return g
		},
	}, req.Groups, ok, answered, code)
	return resp, nil
}

// groupTopicsAuthorized reports whether r's principal may DESCRIBE every
// topic a described group's members subscribe to or are assigned.
func (b *Broker) groupTopicsAuthorized(r *request, g *kmsg.ConsumerGroupDescribeResponseGroup) bool {
	check := b.topicDescribeCheck(r)
	for _, m := range g.Members {
		for _, t := range m.SubscribedTopics {
			if !check(t) {
				return false
			}
		}
		for _, a := range [...]*kmsg.Assignment{&m.Assignment, &m.TargetAssignment} {
			for _, tp := range a.TopicPartitions {
				if tp.Topic != "" && !check(tp.Topic) {
					return false
				}
			}
		}
	}
	return true
}
