package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ConsumerGroupHeartbeat: v0-v1 (KIP-848). v1 members bring their own
// member id and may subscribe by regex (RE2, matched against whole topic
// names). The coordinator assigns partitions itself (uniform or range)
// and hands them out revocations first.
func init() { register(kmsg.ConsumerGroupHeartbeat, 0, 1, (*Broker).handleConsumerGroupHeartbeat) }

func (b *Broker) handleConsumerGroupHeartbeat(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.ConsumerGroupHeartbeatRequest)
	code := b.groupsError()
	if code == 0 {
		resp, err := b.groups.ConsumerGroupHeartbeat(ctx, groupClient(r), req)
		if err == nil {
			return resp, nil
		}
		code = b.groupsFailed("ConsumerGroupHeartbeat", err)
	}
	resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
	resp.ErrorCode = code
	return resp, nil
}
