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
	if code := b.groupsError(); code != 0 {
		resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
		resp.ErrorCode = code
		return resp, nil
	}
	return b.groups.ConsumerGroupHeartbeat(ctx, groupClient(r), req), nil
}
