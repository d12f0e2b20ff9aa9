package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Heartbeat: v0-v4. v3+ group.instance.id; v4+ flexible.
func init() { register(kmsg.Heartbeat, 0, 4, (*Broker).handleHeartbeat) }

func (b *Broker) handleHeartbeat(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.HeartbeatRequest)
	if code := b.groupsError(); code != 0 {
		resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
		resp.ErrorCode = code
		return resp, nil
	}
	return b.groups.Heartbeat(ctx, req), nil
}
