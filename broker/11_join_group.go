package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// JoinGroup: v0-v9. v4+ answers a new dynamic member MEMBER_ID_REQUIRED;
// v5+ static members (group.instance.id); v6+ flexible; v7+ protocol type
// in the response; v8+ reason; v9+ SkipAssignment for a restarted static
// leader. The response is held until the rebalance's join phase completes.
// With ACLs it needs GROUP READ (GROUP_AUTHORIZATION_FAILED).
func init() { register(kmsg.JoinGroup, 0, 9, (*Broker).handleJoinGroup) }

func (b *Broker) handleJoinGroup(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.JoinGroupRequest)
	code := b.groupsError()
	if !b.authorized(r, kmsg.ACLOperationRead, kmsg.ACLResourceTypeGroup, req.Group) {
		code = kerr.GroupAuthorizationFailed.Code
	}
	if code != 0 {
		resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
		resp.MemberID = req.MemberID
		resp.ErrorCode = code
		return resp, nil
	}
	hctx, cancel := b.heldContext(ctx)
	defer cancel()
	resp, err := b.groups.JoinGroup(hctx, groupClient(r), req)
	switch {
	case err == nil:
		return resp, nil
	case ctx.Err() != nil:
		// The connection closed while the request was held in a
		// rebalance: there is no one to answer.
		return nil, nil
	}
	resp = req.ResponseKind().(*kmsg.JoinGroupResponse)
	resp.MemberID = req.MemberID
	resp.ErrorCode = b.heldFailed("JoinGroup", err)
	return resp, nil
}
