package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ConsumerGroupHeartbeat: v0-v1 (KIP-848). v1 members bring their own
// member id and may subscribe by regex (RE2, matched against whole topic
// names). The coordinator assigns partitions itself (uniform or range)
// and hands them out revocations first. With ACLs it needs GROUP READ
// (GROUP_AUTHORIZATION_FAILED) and TOPIC DESCRIBE on every subscribed
// topic name (else TOPIC_AUTHORIZATION_FAILED), as Kafka.
func init() { register(kmsg.ConsumerGroupHeartbeat, 0, 1, (*Broker).handleConsumerGroupHeartbeat) }

func (b *Broker) handleConsumerGroupHeartbeat(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.ConsumerGroupHeartbeatRequest)
	code := b.groupsError()
	switch {
	case !b.authorized(r, kmsg.ACLOperationRead, kmsg.ACLResourceTypeGroup, req.Group):
		code = kerr.GroupAuthorizationFailed.Code
	case !b.subscriptionAuthorized(r, req.SubscribedTopicNames):
		code = kerr.TopicAuthorizationFailed.Code
	}
	if code == 0 {
		resp, err := b.groups.ConsumerGroupHeartbeat(ctx, groupClient(r), req)
		if err == nil {
			return resp, nil
		}
		code = b.groupsFailed("ConsumerGroupHeartbeat", err)
	}
	resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
	resp.ErrorCode = code
	return resp, nil
}

// subscriptionAuthorized reports whether r's principal may DESCRIBE every
// topic of a KIP-848 subscription by names.
func (b *Broker) subscriptionAuthorized(r *request, topics []string) bool {
	for _, t := range topics {
		if !b.authorizedTopic(r, kmsg.ACLOperationDescribe, t) {
			return false
		}
	}
	return true
}
