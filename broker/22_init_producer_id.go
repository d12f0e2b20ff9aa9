package broker

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/coordapi"
)

// InitProducerId: v0-v4. v2+ flexible; v3+ carries the current producer id
// and epoch so that an idempotent producer can bump its epoch (KIP-360);
// v4 only adds PRODUCER_FENCED as an answer. v5 (KIP-890's second part) is
// not served. The coordinator owns producer ids and epochs; for a
// transactional id it is the transaction coordinator (coordinator/txn.go):
// a new id's producer, or an epoch bump that fences the id's previous
// producer and aborts what it left open. With ACLs a
// transactional id needs TRANSACTIONAL_ID WRITE, an idempotent producer
// CLUSTER IDEMPOTENT_WRITE or WRITE on some topic (KIP-679), as Kafka.
func init() { register(kmsg.InitProducerID, 0, 4, (*Broker).handleInitProducerID) }

func (b *Broker) handleInitProducerID(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.InitProducerIDRequest)
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	if code := b.initProducerIDAuthorized(r, req.TransactionalID); code != 0 {
		resp.ErrorCode = code
		return resp, nil
	}
	out, err := b.coord.InitProducerID(ctx, coordapi.InitProducerIDRequest{
		TransactionalID: req.TransactionalID,
		TimeoutMs:       req.TransactionTimeoutMillis,
		ProducerID:      req.ProducerID,
		ProducerEpoch:   req.ProducerEpoch,
	})
	if err != nil {
		resp.ErrorCode = initProducerIDErrorCode(err, req.Version)
		return resp, nil
	}
	resp.ProducerID, resp.ProducerEpoch = out.ProducerID, out.ProducerEpoch
	return resp, nil
}

// initProducerIDErrorCode maps a coordinator error to a code the client's
// version knows. A failure without a Kafka code (the coordinator is
// unreachable, its store failed) is COORDINATOR_NOT_AVAILABLE, which every
// client retries; most treat any other unexpected code here as fatal for
// the producer. PRODUCER_FENCED (v4+) is INVALID_PRODUCER_EPOCH before.
func initProducerIDErrorCode(err error, version int16) int16 {
	var ke *kerr.Error
	if !errors.As(err, &ke) {
		return kerr.CoordinatorNotAvailable.Code
	}
	if ke == kerr.ProducerFenced && version < 4 {
		return kerr.InvalidProducerEpoch.Code
	}
	return ke.Code
}

// initProducerIDAuthorized returns the code an InitProducerId gets when r's
// principal may not ask for it (0 when it may): a transactional id needs
// TRANSACTIONAL_ID WRITE on it; an idempotent producer CLUSTER
// IDEMPOTENT_WRITE or else WRITE on at least one topic (KIP-679), else
// CLUSTER_AUTHORIZATION_FAILED.
func (b *Broker) initProducerIDAuthorized(r *request, transactionalID *string) int16 {
	if b.acls == nil {
		return 0
	}
	if transactionalID != nil {
		if !b.authorized(r, kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTransactionalId, *transactionalID) {
			return kerr.TransactionalIDAuthorizationFailed.Code
		}
		return 0
	}
	if b.authorizedQuiet(r, kmsg.ACLOperationIdempotentWrite, kmsg.ACLResourceTypeCluster, coordapi.ACLClusterName) ||
		b.authorizedAny(r, kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTopic) {
		return 0
	}
	b.denied(r, kmsg.ACLOperationIdempotentWrite, kmsg.ACLResourceTypeCluster, coordapi.ACLClusterName)
	return kerr.ClusterAuthorizationFailed.Code
}
