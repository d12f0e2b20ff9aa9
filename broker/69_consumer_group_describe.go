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
	code := b.groupsError()
	if code == 0 {
		resp, err := b.groups.ConsumerGroupDescribe(ctx, req)
		if err == nil {
			return resp, nil
		}
		code = b.groupsFailed("ConsumerGroupDescribe", err)
	}
	resp := req.ResponseKind().(*kmsg.ConsumerGroupDescribeResponse)
	for _, g := range req.Groups {
		dg := kmsg.NewConsumerGroupDescribeResponseGroup()
		dg.Group = g
		dg.ErrorCode = code
		resp.Groups = append(resp.Groups, dg)
	}
	return resp, nil
}
