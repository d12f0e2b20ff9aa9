package broker

import (
	"context"
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
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
	if b.apiHidden(r.key) {
		return nil, errShareGroupsDisabled
	}
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
	k := 0
	for i, g := range req.GroupIDs {
		if groupOK(ok, i) && k < len(answered) && answered[k].GroupID == g {
			dg := answered[k]
			k++
			if dg.AuthorizedOperations != math.MinInt32 { // asked for
				dg.AuthorizedOperations = b.groupAuthorizedOperations(r, g)
			}
			if !b.shareGroupTopicsAuthorized(r, &dg) {
				dg = kmsg.NewShareGroupDescribeResponseGroup()
				dg.GroupID = g
				dg.ErrorCode = kerr.TopicAuthorizationFailed.Code
				dg.ErrorMessage = kmsg.StringPtr("The group has described topic(s) that the client is not authorized to describe.")
			}
			resp.Groups = append(resp.Groups, dg)
			continue
		}
		dg := kmsg.NewShareGroupDescribeResponseGroup()
		dg.GroupID = g
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

// shareGroupTopicsAuthorized reports whether r's principal may DESCRIBE
// every topic a described share group's members subscribe to or are
// assigned.
func (b *Broker) shareGroupTopicsAuthorized(r *request, g *kmsg.ShareGroupDescribeResponseGroup) bool {
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
