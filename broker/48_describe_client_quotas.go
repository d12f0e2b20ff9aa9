package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeClientQuotas: v0-v1. v1 is flexible. floe keeps no client
// quotas (Kafka's produce, fetch and request-rate quotas): every filter
// matches no entity. kafka-configs.sh --describe --entity-type users asks
// it beside DescribeUserScramCredentials, so it must be answered. It needs
// CLUSTER DESCRIBE_CONFIGS, as in Kafka.
func init() { register(kmsg.DescribeClientQuotas, 0, 1, (*Broker).handleDescribeClientQuotas) }

func (b *Broker) handleDescribeClientQuotas(_ context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.DescribeClientQuotasRequest)
	resp := req.ResponseKind().(*kmsg.DescribeClientQuotasResponse)
	if !b.authorizeCluster(r, kmsg.ACLOperationDescribeConfigs) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		msg := kerr.ClusterAuthorizationFailed.Description
		resp.ErrorMessage = &msg
		return resp, nil
	}
	// Entries is nullable, null only with an error: Kafka's tools read it.
	resp.Entries = []kmsg.DescribeClientQuotasResponseEntry{}
	return resp, nil
}
