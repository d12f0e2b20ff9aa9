package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Heartbeat: v0-v4. v3+ group.instance.id; v4+ flexible. With ACLs it
// needs GROUP READ (GROUP_AUTHORIZATION_FAILED).
func init() { register(kmsg.Heartbeat, 0, 4, (*Broker).handleHeartbeat) }

func (b *Broker) handleHeartbeat(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.HeartbeatRequest)
	code := b.groupsError()
	if !b.authorized(r, kmsg.ACLOperationRead, kmsg.ACLResourceTypeGroup, req.Group) {
		code = kerr.GroupAuthorizationFailed.Code
	}
	if code == 0 {
		resp, err := b.groups.Heartbeat(ctx, req)
		if err == nil {
			return resp, nil
		}
		code = b.groupsFailed("Heartbeat", err)
	}
	resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
	resp.ErrorCode = code
	return resp, nil
}
