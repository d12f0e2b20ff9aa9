package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/coordapi"
)

// DeleteAcls: v0-v3. v1 adds the pattern type (LITERAL in v0), v2+
// flexible, v3 adds the USER resource type. Needs CLUSTER ALTER;
// SECURITY_DISABLED with ACLs off. Each filter is validated as Kafka does
// (INVALID_REQUEST); the valid ones are applied in one coordinator call and
// each result lists the bindings its filter deleted. This broker applies
// the change before it answers, the others soon after (see CreateAcls).
func init() { register(kmsg.DeleteACLs, 0, 3, (*Broker).handleDeleteACLs) }

func (b *Broker) handleDeleteACLs(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.DeleteACLsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteACLsResponse)
	resp.Results = make([]kmsg.DeleteACLsResponseResult, len(req.Filters))
	for i := range resp.Results {
		resp.Results[i] = kmsg.NewDeleteACLsResponseResult()
	}
	failAll := func(err error) (kmsg.Response, error) {
		for i := range resp.Results {
			resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = coordapi.ErrorCode(err), errorMessage(err)
		}
		return resp, nil
	}
	switch {
	case b.acls == nil:
		return failAll(errSecurityDisabled)
	case !b.authorizeCluster(r, kmsg.ACLOperationAlter):
		return failAll(kerr.ClusterAuthorizationFailed)
	}
	var (
		valid []coordapi.ACLFilter
		at    []int // index of each valid filter in the request
	)
	for i, f := range req.Filters {
		filter := coordapi.ACLFilter{
			ResourceType: f.ResourceType, ResourceName: f.ResourceName, PatternType: f.ResourcePatternType,
			Principal: f.Principal, Host: f.Host, Operation: f.Operation, Permission: f.PermissionType,
		}
		if err := coordapi.ValidateFilter(filter); err != nil {
			resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = coordapi.ErrorCode(err), errorMessage(err)
			continue
		}
		valid = append(valid, filter)
		at = append(at, i)
	}
	if len(valid) == 0 {
		return resp, nil
	}
	deleted, err := b.coord.DeleteACLs(ctx, valid)
	if err == nil && len(deleted) != len(valid) {
		err = coordapi.Errorf(kerr.UnknownServerError, "coordinator answered %d filters of %d", len(deleted), len(valid))
	}
	if err != nil {
		for _, i := range at {
			resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = coordapi.ErrorCode(err), errorMessage(err)
		}
		return resp, nil
	}
	for j, i := range at {
		for _, bd := range deleted[j] {
			m := kmsg.NewDeleteACLsResponseResultMatchingACL()
			m.ResourceType, m.ResourceName, m.ResourcePatternType = bd.ResourceType, bd.ResourceName, bd.PatternType
			m.Principal, m.Host, m.Operation, m.PermissionType = bd.Principal, bd.Host, bd.Operation, bd.Permission
			resp.Results[i].MatchingACLs = append(resp.Results[i].MatchingACLs, m)
		}
	}
	b.acls.sync(ctx) // applied here before the client is told
	return resp, nil
}
