package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ShareGroupHeartbeat: v1 (KIP-932; v0 was Kafka 4.0's early access,
// removed in 4.1). Members bring their own member id, join with epoch 0,
// leave with -1; the coordinator spreads the subscribed topics'
// partitions over them (the simple assignor) and starts each partition's
// share-partition when it is first assigned. With ACLs it needs GROUP
// READ (GROUP_AUTHORIZATION_FAILED) and TOPIC DESCRIBE on every
// subscribed topic (else TOPIC_AUTHORIZATION_FAILED), as Kafka.
// Options.ShareGroupsDisabled hides it.
func init() { register(kmsg.ShareGroupHeartbeat, 1, 1, (*Broker).handleShareGroupHeartbeat) }

func (b *Broker) handleShareGroupHeartbeat(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.ShareGroupHeartbeatRequest)
	code := b.groupsError()
	switch {
	case !b.authorized(r, kmsg.ACLOperationRead, kmsg.ACLResourceTypeGroup, req.GroupID):
		code = kerr.GroupAuthorizationFailed.Code
	case !b.subscriptionAuthorized(r, req.SubscribedTopicNames):
		code = kerr.TopicAuthorizationFailed.Code
	}
	if code == 0 {
		resp, err := b.groups.ShareGroupHeartbeat(ctx, groupClient(r), req)
		if err == nil {
			return resp, nil
		}
		code = b.groupsFailed("ShareGroupHeartbeat", err)
	}
	resp := req.ResponseKind().(*kmsg.ShareGroupHeartbeatResponse)
	resp.ErrorCode = code
	return resp, nil
}
