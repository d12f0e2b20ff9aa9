package broker

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/coordapi"
)

// ListGroups: v0-v5. v3+ flexible; v4+ states filter; v5+ types filter
// ("classic", "consumer", "share"). Both filters are case-insensitive.
// With ACLs, CLUSTER DESCRIBE lists every group, else only the groups the
// principal may DESCRIBE.
func init() { register(kmsg.ListGroups, 0, 5, (*Broker).handleListGroups) }

func (b *Broker) handleListGroups(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.ListGroupsRequest)
	code := b.groupsError()
	if code == 0 {
		resp, err := b.groups.ListGroups(ctx, req)
		if err == nil {
			// Every broker serves every group, but like a Kafka broker
			// each lists only its share (see groupLister): clients ask
			// every broker and merge, and some (kafkajs) concatenate.
			live := b.liveBrokers()
			// With ACLs, CLUSTER DESCRIBE lists every group, else only
			// the groups the principal may DESCRIBE are, as Kafka.
			all := b.authorizedQuiet(r, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeCluster, coordapi.ACLClusterName)
			resp.Groups = slices.DeleteFunc(resp.Groups, func(g kmsg.ListGroupsResponseGroup) bool {
				return groupLister(live, g.Group).nodeID != b.opts.NodeID ||
					!all && !b.authorizedQuiet(r, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeGroup, g.Group)
			})
			return resp, nil
		}
		code = b.groupsFailed("ListGroups", err)
	}
	resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
	resp.ErrorCode = code
	return resp, nil
}
