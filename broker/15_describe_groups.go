package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeGroups: v0-v6. v3+ authorized operations; v4+ instance ids; v5+
// flexible; v6+ a missing group is GROUP_ID_NOT_FOUND (before: Dead, no
// error).
func init() { register(kmsg.DescribeGroups, 0, 6, (*Broker).handleDescribeGroups) }

func (b *Broker) handleDescribeGroups(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.DescribeGroupsRequest)
	code := b.groupsError()
	if code == 0 {
		resp, err := b.groups.DescribeGroups(ctx, req)
		if err == nil {
			return resp, nil
		}
		code = b.groupsFailed("DescribeGroups", err)
	}
	resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
	for _, g := range req.Groups {
		sg := kmsg.NewDescribeGroupsResponseGroup()
		sg.Group = g
		sg.ErrorCode = code
		resp.Groups = append(resp.Groups, sg)
	}
	return resp, nil
}
