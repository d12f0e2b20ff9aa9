package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// LeaveGroup: v0-v5. v3+ leaves a batch of members (static ones possibly by
// instance id alone) with an error per member; v4+ flexible; v5+ reason.
// With ACLs it needs GROUP READ (GROUP_AUTHORIZATION_FAILED).
func init() { register(kmsg.LeaveGroup, 0, 5, (*Broker).handleLeaveGroup) }

func (b *Broker) handleLeaveGroup(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.LeaveGroupRequest)
	code := b.groupsError()
	if !b.authorized(r, kmsg.ACLOperationRead, kmsg.ACLResourceTypeGroup, req.Group) {
		code = kerr.GroupAuthorizationFailed.Code
	}
	if code == 0 {
		resp, err := b.groups.LeaveGroup(ctx, req)
		if err == nil {
			return resp, nil
		}
		code = b.groupsFailed("LeaveGroup", err)
	}
	resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
	resp.ErrorCode = code
	return resp, nil
}
