package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeCluster: v0-v1. Always flexible; v1 adds the endpoint type, which
// must be 1 (brokers): floe has no separate controllers to describe
// (UNSUPPORTED_ENDPOINT_TYPE otherwise). v2 (fenced brokers) is not served.
// The cluster id, controller and brokers are the ones Metadata returns.
func init() { register(kmsg.DescribeCluster, 0, 1, (*Broker).handleDescribeCluster) }

// endpointTypeBrokers is DescribeCluster's endpoint type for brokers.
const endpointTypeBrokers int8 = 1

// clusterAuthorizedOperations is the bit field of the ACL operations on the
// cluster resource that Kafka reports without an authorizer (all of them):
// CREATE 5, ALTER 7, DESCRIBE 8, CLUSTER_ACTION 9, DESCRIBE_CONFIGS 10,
// ALTER_CONFIGS 11, IDEMPOTENT_WRITE 12.
const clusterAuthorizedOperations int32 = 1<<5 | 1<<7 | 1<<8 | 1<<9 | 1<<10 | 1<<11 | 1<<12

func (b *Broker) handleDescribeCluster(_ context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.DescribeClusterRequest)
	resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
	resp.EndpointType = req.EndpointType
	if req.Version >= 1 && req.EndpointType != endpointTypeBrokers {
		resp.ErrorCode = kerr.UnsupportedEndpointType.Code
		msg := "floe serves only the brokers endpoint type (1)"
		resp.ErrorMessage = &msg
		return resp, nil
	}
	brokers := b.liveBrokers()
	resp.ClusterID = b.opts.ClusterID
	resp.ControllerID = brokers[0].nodeID
	for _, bi := range brokers {
		sb := kmsg.NewDescribeClusterResponseBroker()
		sb.NodeID, sb.Host, sb.Port, sb.Rack = bi.nodeID, bi.host, bi.port, bi.rack
		resp.Brokers = append(resp.Brokers, sb)
	}
	if req.IncludeClusterAuthorizedOperations {
		resp.ClusterAuthorizedOperations = clusterAuthorizedOperations
	}
	return resp, nil
}
