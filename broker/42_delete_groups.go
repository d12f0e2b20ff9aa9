package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DeleteGroups: v0-v2. v2+ flexible. An Empty group is deleted with its
// committed offsets; a group with members is NON_EMPTY_GROUP, a missing one
// GROUP_ID_NOT_FOUND. With ACLs each group needs GROUP DELETE; the others
// are answered GROUP_AUTHORIZATION_FAILED, as Kafka.
func init() { register(kmsg.DeleteGroups, 0, 2, (*Broker).handleDeleteGroups) }

func (b *Broker) handleDeleteGroups(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.DeleteGroupsRequest)
	allowed, ok := b.authorizedGroups(r, kmsg.ACLOperationDelete, req.Groups)
	sub := *req
	sub.Groups = allowed
	resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
	var answered []kmsg.DeleteGroupsResponseGroup
	code := b.groupsError()
	if code == 0 && len(allowed) > 0 {
		gr, err := b.groups.DeleteGroups(ctx, &sub)
		if err != nil {
			code = b.groupsFailed("DeleteGroups", err)
		} else if len(allowed) == len(req.Groups) {
			return gr, nil
		} else {
			answered = gr.Groups
			resp.ThrottleMillis = gr.ThrottleMillis
		}
	}
	k := 0
	for i, g := range req.Groups {
		if groupOK(ok, i) && k < len(answered) && answered[k].Group == g {
			resp.Groups = append(resp.Groups, answered[k])
			k++
			continue
		}
		dg := kmsg.NewDeleteGroupsResponseGroup()
		dg.Group = g
		dg.ErrorCode = code
		if !groupOK(ok, i) {
			dg.ErrorCode = kerr.GroupAuthorizationFailed.Code
		} else if code == 0 {
			dg.ErrorCode = kerr.UnknownServerError.Code // not answered
		}
		resp.Groups = append(resp.Groups, dg)
	}
	return resp, nil
}
