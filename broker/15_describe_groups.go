package broker

import (
	"context"
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeGroups: v0-v6. v3+ authorized operations; v4+ instance ids; v5+
// flexible; v6+ a missing group is GROUP_ID_NOT_FOUND (before: Dead, no
// error). With ACLs each group needs GROUP DESCRIBE; the others are
// answered GROUP_AUTHORIZATION_FAILED, as Kafka.
func init() { register(kmsg.DescribeGroups, 0, 6, (*Broker).handleDescribeGroups) }

func (b *Broker) handleDescribeGroups(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.DescribeGroupsRequest)
	allowed, ok := b.authorizedGroups(r, kmsg.ACLOperationDescribe, req.Groups)
	sub := *req
	sub.Groups = allowed
	resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
	var answered []kmsg.DescribeGroupsResponseGroup
	code := b.groupsError()
	if code == 0 && len(allowed) > 0 {
		gr, err := b.groups.DescribeGroups(ctx, &sub)
		if err != nil {
			code = b.groupsFailed("DescribeGroups", err)
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
			sg := answered[k]
			k++
			if sg.AuthorizedOperations != math.MinInt32 { // asked for (v3+)
				sg.AuthorizedOperations = b.groupAuthorizedOperations(r, g)
			}
			resp.Groups = append(resp.Groups, sg)
			continue
		}
		sg := kmsg.NewDescribeGroupsResponseGroup()
		sg.Group = g
		sg.ErrorCode = code
		if !groupOK(ok, i) {
			sg.ErrorCode = kerr.GroupAuthorizationFailed.Code
		} else if code == 0 {
			sg.ErrorCode = kerr.UnknownServerError.Code // not answered
		}
		resp.Groups = append(resp.Groups, sg)
	}
	return resp, nil
}

// groupAuthorizedOperations is the bit field of the group operations
// (READ, DELETE, DESCRIBE) r's principal may perform on group.
func (b *Broker) groupAuthorizedOperations(r *request, group string) int32 {
	var ops int32
	for _, op := range [...]kmsg.ACLOperation{kmsg.ACLOperationRead, kmsg.ACLOperationDelete, kmsg.ACLOperationDescribe} {
		if b.authorizedQuiet(r, op, kmsg.ACLResourceTypeGroup, group) {
			ops |= 1 << op
		}
	}
	return ops
}
