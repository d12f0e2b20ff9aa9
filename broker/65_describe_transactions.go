package broker

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/coordapi"
)

// DescribeTransactions: v0 (flexible). The state of transactional ids, for
// kafka-transactions.sh describe and kadm: an unknown id is
// TRANSACTIONAL_ID_NOT_FOUND, one the principal may not DESCRIBE
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED, and topics it may not DESCRIBE are
// left out, as in Kafka.
func init() { register(kmsg.DescribeTransactions, 0, 0, (*Broker).handleDescribeTransactions) }

func (b *Broker) handleDescribeTransactions(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.DescribeTransactionsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeTransactionsResponse)
	var ask []string
	for _, id := range req.TransactionalIDs {
		if b.authorized(r, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTransactionalId, id) {
			ask = append(ask, id)
		}
	}
	descs, err := b.coord.DescribeTransactions(ctx, ask)
	byID := map[string]coordapi.TxnDescription{}
	for _, d := range descs {
		byID[d.TransactionalID] = d
	}
	for _, id := range req.TransactionalIDs {
		st := kmsg.NewDescribeTransactionsResponseTransactionState()
		st.TransactionalID, st.ProducerID, st.ProducerEpoch, st.StartTimestamp = id, -1, -1, -1
		d, ok := byID[id]
		switch {
		case !slices.Contains(ask, id):
			st.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		case err != nil:
			st.ErrorCode = txnErrorCode(err, 0, 0)
		case !ok:
			st.ErrorCode = kerr.TransactionalIDNotFound.Code
		default:
			st.ErrorCode = d.ErrorCode
			if d.ErrorCode == 0 {
				st.State, st.TimeoutMillis, st.StartTimestamp = d.State.String(), d.TimeoutMs, d.StartMs
				st.ProducerID, st.ProducerEpoch = d.ProducerID, d.ProducerEpoch
				st.Topics = b.txnTopics(ctx, r, d.Partitions)
			}
		}
		resp.TransactionStates = append(resp.TransactionStates, st)
	}
	return resp, nil
}

// txnTopics names a transaction's partitions by topic, leaving out topics
// deleted since and those r's principal may not DESCRIBE.
func (b *Broker) txnTopics(ctx context.Context, r *request, tps []coordapi.TopicPartition) []kmsg.DescribeTransactionsResponseTransactionStateTopic {
	var out []kmsg.DescribeTransactionsResponseTransactionStateTopic
	index := map[coordapi.TopicID]int{}
	for _, tp := range tps {
		i, ok := index[tp.TopicID]
		if !ok {
			t, err := b.topics.ByID(ctx, tp.TopicID)
			if err != nil || !b.authorizedTopic(r, kmsg.ACLOperationDescribe, t.Name) {
				index[tp.TopicID] = -1
				continue
			}
			rt := kmsg.NewDescribeTransactionsResponseTransactionStateTopic()
			rt.Topic = t.Name
			out = append(out, rt)
			i = len(out) - 1
			index[tp.TopicID] = i
		}
		if i >= 0 {
			out[i].Partitions = append(out[i].Partitions, tp.Partition)
		}
	}
	return out
}
