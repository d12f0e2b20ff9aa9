package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ConsumerGroupDescribe: v0-v1 (KIP-848). v1 adds each member's type. A
// classic or missing group is GROUP_ID_NOT_FOUND.
func init() { register(kmsg.ConsumerGroupDescribe, 0, 1, (*Broker).handleConsumerGroupDescribe) }

func (b *Broker) handleConsumerGroupDescribe(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.ConsumerGroupDescribeRequest)
	if code := b.groupsError(); code != 0 {
		resp := req.ResponseKind().(*kmsg.ConsumerGroupDescribeResponse)
		for _, g := range req.Groups {
			dg := kmsg.NewConsumerGroupDescribeResponseGroup()
			dg.Group = g
			dg.ErrorCode = code
			resp.Groups = append(resp.Groups, dg)
		}
		return resp, nil
	}
	return b.groups.ConsumerGroupDescribe(ctx, req), nil
}
