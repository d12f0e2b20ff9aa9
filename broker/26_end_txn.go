package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/coordapi"
)

// EndTxn: v0-v4. v3+ flexible; v4 only adds TRANSACTION_ABORTABLE. v5
// (KIP-890's second part, an epoch bump with every transaction) is not
// served. The answer comes once the coordinator has written the markers
// into every partition of the transaction and committed or dropped its
// groups' offsets.
func init() { register(kmsg.EndTxn, 0, 4, (*Broker).handleEndTxn) }

func (b *Broker) handleEndTxn(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.EndTxnRequest)
	resp := req.ResponseKind().(*kmsg.EndTxnResponse)
	if !b.txnAuthorized(r, req.TransactionalID) {
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		return resp, nil
	}
	err := b.coord.EndTxn(ctx, coordapi.EndTxnRequest{TxnProducer: coordapi.TxnProducer{TransactionalID: req.TransactionalID,
		ProducerID: req.ProducerID, ProducerEpoch: req.ProducerEpoch}, Commit: req.Commit})
	resp.ErrorCode = txnErrorCode(err, req.Version, 2)
	if err != nil && resp.ErrorCode == kerr.CoordinatorNotAvailable.Code {
		b.log.Warn("end txn", "transactional_id", req.TransactionalID, "commit", req.Commit, "err", err)
	}
	return resp, nil
}
