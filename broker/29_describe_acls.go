package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/coordapi"
)

// DescribeAcls: v0-v3. v1 adds the pattern type (v0 filters LITERAL, as
// Kafka reads them), v2+ flexible, v3 adds the USER resource type. Needs
// CLUSTER DESCRIBE; SECURITY_DISABLED with ACLs off, as Kafka without an
// authorizer. The bindings come from the coordinator, grouped by resource
// pattern.
func init() { register(kmsg.DescribeACLs, 0, 3, (*Broker).handleDescribeACLs) }

func (b *Broker) handleDescribeACLs(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.DescribeACLsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeACLsResponse)
	fail := func(err error) (kmsg.Response, error) {
		resp.ErrorCode = coordapi.ErrorCode(err)
		resp.ErrorMessage = errorMessage(err)
		return resp, nil
	}
	if b.acls == nil {
		return fail(errSecurityDisabled)
	}
	if !b.authorizeCluster(r, kmsg.ACLOperationDescribe) {
		return fail(kerr.ClusterAuthorizationFailed)
	}
	filter := coordapi.ACLFilter{
		ResourceType: req.ResourceType, ResourceName: req.ResourceName, PatternType: req.ResourcePatternType,
		Principal: req.Principal, Host: req.Host, Operation: req.Operation, Permission: req.PermissionType,
	}
	if err := coordapi.ValidateFilter(filter); err != nil {
		return fail(err)
	}
	bindings, err := b.coord.DescribeACLs(ctx, filter)
	if err != nil {
		return fail(err)
	}
	// The coordinator sorts by resource type, pattern type and name
	// first: each resource's bindings are adjacent.
	for i := range bindings {
		bd := &bindings[i]
		n := len(resp.Resources)
		if n == 0 || resp.Resources[n-1].ResourceType != bd.ResourceType || resp.Resources[n-1].ResourceName != bd.ResourceName ||
			resp.Resources[n-1].ResourcePatternType != bd.PatternType {
			res := kmsg.NewDescribeACLsResponseResource()
			res.ResourceType, res.ResourceName, res.ResourcePatternType = bd.ResourceType, bd.ResourceName, bd.PatternType
			resp.Resources = append(resp.Resources, res)
			n++
		}
		a := kmsg.NewDescribeACLsResponseResourceACL()
		a.Principal, a.Host, a.Operation, a.PermissionType = bd.Principal, bd.Host, bd.Operation, bd.Permission
		resp.Resources[n-1].ACLs = append(resp.Resources[n-1].ACLs, a)
	}
	return resp, nil
}

// errSecurityDisabled answers the ACL APIs with ACLs off, in Kafka's words.
var errSecurityDisabled = &coordapi.KafkaError{Code: kerr.SecurityDisabled, Message: "No Authorizer is configured on the broker (floe: --acls-enabled is off)"}
