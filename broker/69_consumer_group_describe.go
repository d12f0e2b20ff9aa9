package broker

import (
	"context"
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
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
	k := 0
	for i, g := range req.Groups {
		if groupOK(ok, i) && k < len(answered) && answered[k].Group == g {
			dg := answered[k]
			k++
			if dg.AuthorizedOperations != math.MinInt32 { // asked for
				dg.AuthorizedOperations = b.groupAuthorizedOperations(r, g)
			}
			if !b.groupTopicsAuthorized(r, &dg) {
				dg = kmsg.NewConsumerGroupDescribeResponseGroup()
				dg.Group = g
				dg.ErrorCode = kerr.TopicAuthorizationFailed.Code
				dg.ErrorMessage = kmsg.StringPtr("The group has described topic(s) that the client is not authorized to describe.")
			}
			resp.Groups = append(resp.Groups, dg)
			continue
		}
		dg := kmsg.NewConsumerGroupDescribeResponseGroup()
		dg.Group = g
		dg.ErrorCode = code
		if !groupOK(ok, i) {
			dg.ErrorCode = kerr.GroupAuthorizationFailed.Code
		} else if code == 0 {
			dg.ErrorCode = kerr.UnknownServerError.Code // not answered
		}
		resp.Groups = append(resp.Groups, dg)
	}
	return resp, nil
}

// groupTopicsAuthorized reports whether r's principal may DESCRIBE every
// topic a described group's members subscribe to or are assigned.
func (b *Broker) groupTopicsAuthorized(r *request, g *kmsg.ConsumerGroupDescribeResponseGroup) bool {
	checked := map[string]bool{}
	check := func(t string) bool {
		if ok, seen := checked[t]; seen {
			return ok
		}
		ok := b.authorizedTopic(r, kmsg.ACLOperationDescribe, t)
		checked[t] = ok
		return ok
	}
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
