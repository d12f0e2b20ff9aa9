package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/coordapi"
)

// AddOffsetsToTxn: v0-v4. v3+ flexible; v4 only adds TRANSACTION_ABORTABLE.
// It adds a consumer group to the producer's transaction, so that the
// offsets TxnOffsetCommit stores for it are committed or dropped with the
// transaction. It needs TRANSACTIONAL_ID WRITE and GROUP READ, as Kafka.
func init() { register(kmsg.AddOffsetsToTxn, 0, 4, (*Broker).handleAddOffsetsToTxn) }

func (b *Broker) handleAddOffsetsToTxn(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.AddOffsetsToTxnRequest)
	resp := req.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
	switch {
	case !b.txnAuthorized(r, req.TransactionalID):
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
	case !b.authorized(r, kmsg.ACLOperationRead, kmsg.ACLResourceTypeGroup, req.Group):
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
	default:
		err := b.coord.AddOffsetsToTxn(ctx, coordapi.TxnProducer{TransactionalID: req.TransactionalID, ProducerID: req.ProducerID,
			ProducerEpoch: req.ProducerEpoch}, req.Group)
		resp.ErrorCode = txnErrorCode(err, req.Version, 2)
	}
	return resp, nil
}
