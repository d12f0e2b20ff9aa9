package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Group configs (ConfigResource type GROUP, 32): DescribeConfigs and
// IncrementalAlterConfigs hand each GROUP resource to the group
// coordinator, which stores and checks them (groups/group_configs.go:
// share.auto.offset.reset, share.isolation.level,
// share.record.lock.duration.ms, share.delivery.count.limit). With ACLs a group needs GROUP
// DESCRIBE_CONFIGS or ALTER_CONFIGS (GROUP_AUTHORIZATION_FAILED), as Kafka.
// The legacy AlterConfigs takes no GROUP resource.

// describeGroupConfigs answers one GROUP resource of a DescribeConfigs.
func (b *Broker) describeGroupConfigs(ctx context.Context, req *kmsg.DescribeConfigsRequest, rr kmsg.DescribeConfigsRequestResource) kmsg.DescribeConfigsResponseResource {
	fail := func(code int16) kmsg.DescribeConfigsResponseResource {
		sr := kmsg.NewDescribeConfigsResponseResource()
		sr.ResourceType, sr.ResourceName, sr.ErrorCode = rr.ResourceType, rr.ResourceName, code
		sr.ErrorMessage = kmsg.StringPtr("")
		return sr
	}
	if code := b.groupsError(); code != 0 {
		return fail(code)
	}
	sub := *req
	sub.Resources = []kmsg.DescribeConfigsRequestResource{rr}
	resp, err := b.groups.DescribeGroupConfigs(ctx, &sub)
	if err != nil || len(resp.Resources) != 1 {
		return fail(b.groupsFailed("DescribeConfigs", err))
	}
	return resp.Resources[0]
}

// alterGroupConfigs applies one GROUP resource of an
// IncrementalAlterConfigs.
func (b *Broker) alterGroupConfigs(ctx context.Context, req *kmsg.IncrementalAlterConfigsRequest, rr kmsg.IncrementalAlterConfigsRequestResource) kmsg.IncrementalAlterConfigsResponseResource {
	fail := func(code int16) kmsg.IncrementalAlterConfigsResponseResource {
		sr := kmsg.NewIncrementalAlterConfigsResponseResource()
		sr.ResourceType, sr.ResourceName, sr.ErrorCode = rr.ResourceType, rr.ResourceName, code
		return sr
	}
	if code := b.groupsError(); code != 0 {
		return fail(code)
	}
	sub := *req
	sub.Resources = []kmsg.IncrementalAlterConfigsRequestResource{rr}
	resp, err := b.groups.AlterGroupConfigs(ctx, &sub)
	if err != nil || len(resp.Resources) != 1 {
		return fail(b.groupsFailed("IncrementalAlterConfigs", err))
	}
	return resp.Resources[0]
}

// groupConfigsAuthorized reports GROUP_AUTHORIZATION_FAILED when r's
// principal may not op on group's configs.
func (b *Broker) groupConfigsAuthorized(r *request, op kmsg.ACLOperation, group string) error {
	if !b.authorized(r, op, kmsg.ACLResourceTypeGroup, group) {
		return kerr.GroupAuthorizationFailed
	}
	return nil
}
