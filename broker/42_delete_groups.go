package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// DeleteGroups: v0-v2. v2+ flexible. An Empty group is deleted with its
// committed offsets; a group with members is NON_EMPTY_GROUP, a missing one
// GROUP_ID_NOT_FOUND.
func init() { register(kmsg.DeleteGroups, 0, 2, (*Broker).handleDeleteGroups) }

func (b *Broker) handleDeleteGroups(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.DeleteGroupsRequest)
	code := b.groupsError()
	if code == 0 {
		resp, err := b.groups.DeleteGroups(ctx, req)
		if err == nil {
			return resp, nil
		}
		code = b.groupsFailed("DeleteGroups", err)
	}
	resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
	for _, g := range req.Groups {
		dg := kmsg.NewDeleteGroupsResponseGroup()
		dg.Group = g
		dg.ErrorCode = code
		resp.Groups = append(resp.Groups, dg)
	}
	return resp, nil
}
