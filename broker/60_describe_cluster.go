package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/coordapi"
)

// DescribeCluster: v0-v1. Always flexible; v1 adds the endpoint type, which
// must be 1 (brokers): floe has no separate controllers to describe
// (UNSUPPORTED_ENDPOINT_TYPE otherwise). v2 (fenced brokers) is not served.
// The cluster id, controller and brokers are the ones Metadata returns.
// With ACLs it is answered to every principal, as Kafka's KafkaApis does
// (the brokers are no secret: Metadata names them too); the authorized
// operations asked for are the principal's, none without CLUSTER DESCRIBE.
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
		resp.ClusterAuthorizedOperations = b.clusterAuthorizedOperations(r)
	}
	return resp, nil
}

// clusterAuthorizedOperations is the bit field of the cluster operations
// r's principal may perform: all of them with ACLs off, none without
// CLUSTER DESCRIBE (as Kafka computes it).
func (b *Broker) clusterAuthorizedOperations(r *request) int32 {
	if b.acls == nil {
		return clusterAuthorizedOperations
	}
	if !b.authorizedQuiet(r, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeCluster, coordapi.ACLClusterName) {
		return 0
	}
	var ops int32
	for op := kmsg.ACLOperationCreate; op <= kmsg.ACLOperationIdempotentWrite; op++ {
		if clusterAuthorizedOperations&(1<<op) != 0 && b.authorizedQuiet(r, op, kmsg.ACLResourceTypeCluster, coordapi.ACLClusterName) {
			ops |= 1 << op
		}
	}
	return ops
}
