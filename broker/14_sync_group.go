package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// SyncGroup: v0-v5. v3+ group.instance.id; v4+ flexible; v5+ protocol type
// and name, checked against the group's. A follower's SyncGroup is held
// until the leader's arrives (or a new rebalance starts). With ACLs it
// needs GROUP READ (GROUP_AUTHORIZATION_FAILED).
func init() { register(kmsg.SyncGroup, 0, 5, (*Broker).handleSyncGroup) }

func (b *Broker) handleSyncGroup(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.SyncGroupRequest)
	code := b.groupsError()
	if !b.authorized(r, kmsg.ACLOperationRead, kmsg.ACLResourceTypeGroup, req.Group) {
		code = kerr.GroupAuthorizationFailed.Code
	}
	if code != 0 {
		resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
		resp.ErrorCode = code
		return resp, nil
	}
	hctx, cancel := b.heldContext(ctx)
	defer cancel()
	resp, err := b.groups.SyncGroup(hctx, req)
	switch {
	case err == nil:
		return resp, nil
	case ctx.Err() != nil:
		// The connection closed while the request was held in a
		// rebalance: there is no one to answer.
		return nil, nil
	}
	resp = req.ResponseKind().(*kmsg.SyncGroupResponse)
	resp.ErrorCode = b.heldFailed("SyncGroup", err)
	return resp, nil
}
