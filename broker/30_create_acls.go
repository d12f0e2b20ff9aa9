package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/coordapi"
)

// CreateAcls: v0-v3. v1 adds the pattern type (LITERAL in v0), v2+
// flexible, v3 adds the USER resource type. Needs CLUSTER ALTER;
// SECURITY_DISABLED with ACLs off. Each creation is validated as Kafka
// does (INVALID_REQUEST with its message); the valid ones are stored in
// one coordinator call, a binding already stored succeeding again. This
// broker applies the change before it answers; the others on the
// coordinator's notice, or their next poll of the ACL version.
func init() { register(kmsg.CreateACLs, 0, 3, (*Broker).handleCreateACLs) }

func (b *Broker) handleCreateACLs(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.CreateACLsRequest)
	resp := req.ResponseKind().(*kmsg.CreateACLsResponse)
	resp.Results = make([]kmsg.CreateACLsResponseResult, len(req.Creations))
	for i := range resp.Results {
		resp.Results[i] = kmsg.NewCreateACLsResponseResult()
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
		valid []coordapi.ACLBinding
		at    []int // index of each valid binding's creation
	)
	for i, c := range req.Creations {
		bd := coordapi.ACLBinding{
			ResourceType: c.ResourceType, ResourceName: c.ResourceName, PatternType: c.ResourcePatternType,
			Principal: c.Principal, Host: c.Host, Operation: c.Operation, Permission: c.PermissionType,
		}
		if err := coordapi.ValidateBinding(bd); err != nil {
			resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = coordapi.ErrorCode(err), errorMessage(err)
			continue
		}
		valid = append(valid, bd)
		at = append(at, i)
	}
	if len(valid) == 0 {
		return resp, nil
	}
	if err := b.coord.CreateACLs(ctx, valid); err != nil {
		for _, i := range at {
			resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = coordapi.ErrorCode(err), errorMessage(err)
		}
		return resp, nil
	}
	b.acls.sync(ctx) // applied here before the client is told
	return resp, nil
}
