package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ShareGroupDescribe: v1 (KIP-932). Each share group's state (Empty or
// Stable), epochs, assignor ("simple") and members with their
// assignments; a missing group, or one that is not a share group, is
// GROUP_ID_NOT_FOUND. With ACLs each group needs GROUP DESCRIBE
// (GROUP_AUTHORIZATION_FAILED), and a group whose members subscribe to or
// are assigned a topic the principal may not DESCRIBE is answered
// TOPIC_AUTHORIZATION_FAILED, as Kafka. Options.ShareGroupsDisabled hides
// it.
func init() { register(kmsg.ShareGroupDescribe, 1, 1, (*Broker).handleShareGroupDescribe) }

func (b *Broker) handleShareGroupDescribe(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.ShareGroupDescribeRequest)
	allowed, ok := b.authorizedGroups(r, kmsg.ACLOperationDescribe, req.GroupIDs)
	sub := *req
	sub.GroupIDs = allowed
	resp := req.ResponseKind().(*kmsg.ShareGroupDescribeResponse)
	var answered []kmsg.ShareGroupDescribeResponseGroup
	code := b.groupsError()
	if code == 0 && len(allowed) > 0 {
		gr, err := b.groups.ShareGroupDescribe(ctx, &sub)
		if err != nil {
			code = b.groupsFailed("ShareGroupDescribe", err)
		} else if b.acls == nil {
			return gr, nil
		} else {
			answered = gr.Groups
			resp.ThrottleMillis = gr.ThrottleMillis
		}
	}
	resp.Groups = describedGroups(b, r, describedGroup[kmsg.ShareGroupDescribeResponseGroup]{
		id:       func(g *kmsg.ShareGroupDescribeResponseGroup) string { return g.GroupID },
		ops:      func(g *kmsg.ShareGroupDescribeResponseGroup) *int32 { return &g.AuthorizedOperations },
		topicsOK: func(g *kmsg.ShareGroupDescribeResponseGroup) bool { return b.shareGroupTopicsAuthorized(r, g) },
		failed: func(group string, code int16, msg *string) kmsg.ShareGroupDescribeResponseGroup {
			g := kmsg.NewShareGroupDescribeResponseGroup()
			g.GroupID, g.ErrorCode, g.ErrorMessage = group, code, msg
			return g
		},
	}, req.GroupIDs, ok, answered, code)
	return resp, nil
}

// shareGroupTopicsAuthorized reports whether r's principal may DESCRIBE
// every topic a described share group's members subscribe to or are
// assigned.
func (b *Broker) shareGroupTopicsAuthorized(r *request, g *kmsg.ShareGroupDescribeResponseGroup) bool {
	check := b.topicDescribeCheck(r)
	for _, m := range g.Members {
		for _, t := range m.SubscribedTopicNames {
			if !check(t) {
				return false
			}
		}
		for _, tp := range m.Assignment.TopicPartitions {
			if tp.Topic != "" && !check(tp.Topic) {
				return false
			}
		}
	}
	return true
}
