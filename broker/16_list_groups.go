package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ListGroups: v0-v5. v3+ flexible; v4+ states filter; v5+ types filter
// ("classic", "consumer"). Both filters are case-insensitive.
func init() { register(kmsg.ListGroups, 0, 5, (*Broker).handleListGroups) }

func (b *Broker) handleListGroups(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.ListGroupsRequest)
	if code := b.groupsError(); code != 0 {
		// Like a Kafka broker that coordinates no group: none listed
		// (clients ask every broker).
		resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
		if code != kerr.NotCoordinator.Code {
			resp.ErrorCode = code
		}
		return resp, nil
	}
	return b.groups.ListGroups(ctx, req), nil
}
