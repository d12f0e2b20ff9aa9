package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/coordapi"
)

// AddPartitionsToTxn: v0-v5. v3+ flexible; v4+ batches several
// transactions in one request, with VerifyOnly (KIP-890: checks without
// adding); v5 only adds TRANSACTION_ABORTABLE as an answer. A partition must
// be added before its producer's transactional batches, which the
// coordinator refuses otherwise. Each partition answers its own code; a
// topic the principal may not write, or that does not exist, fails its
// partitions and the others answer OPERATION_NOT_ATTEMPTED, as in Kafka.
// v4+ is the brokers' own version (a partition leader verifying a
// transaction): as in Kafka it needs CLUSTER_ACTION on the cluster, else the
// whole request answers CLUSTER_AUTHORIZATION_FAILED.
func init() { register(kmsg.AddPartitionsToTxn, 0, 5, (*Broker).handleAddPartitionsToTxn) }

func (b *Broker) handleAddPartitionsToTxn(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.AddPartitionsToTxnRequest)
	resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	if req.Version >= 4 {
		if !b.authorizeCluster(r, kmsg.ACLOperationClusterAction) {
			resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
			return resp, nil
		}
		for _, tx := range req.Transactions {
			resp.Transactions = append(resp.Transactions, b.addTxnPartitions(ctx, r, tx, req.Version))
		}
		return resp, nil
	}
	// v0-v3: one transaction, the request's own fields.
	tx := kmsg.NewAddPartitionsToTxnRequestTransaction()
	tx.TransactionalID, tx.ProducerID, tx.ProducerEpoch = req.TransactionalID, req.ProducerID, req.ProducerEpoch
	for _, t := range req.Topics {
		tx.Topics = append(tx.Topics, kmsg.AddPartitionsToTxnRequestTransactionTopic{Topic: t.Topic, Partitions: t.Partitions})
	}
	for _, rt := range b.addTxnPartitions(ctx, r, tx, req.Version).Topics {
		t := kmsg.NewAddPartitionsToTxnResponseTopic()
		t.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			t.Partitions = append(t.Partitions, kmsg.AddPartitionsToTxnResponseTopicPartition{Partition: rp.Partition, ErrorCode: rp.ErrorCode})
		}
		resp.Topics = append(resp.Topics, t)
	}
	return resp, nil
}

// addTxnPartitions serves one transaction of the request.
func (b *Broker) addTxnPartitions(ctx context.Context, r *request, tx kmsg.AddPartitionsToTxnRequestTransaction, version int16) kmsg.AddPartitionsToTxnResponseTransaction {
	topics := map[string][]int32{}
	for _, t := range tx.Topics {
		topics[t.Topic] = append(topics[t.Topic], t.Partitions...)
	}
	codes := b.addPartitions(ctx, r, coordapi.TxnProducer{TransactionalID: tx.TransactionalID, ProducerID: tx.ProducerID,
		ProducerEpoch: tx.ProducerEpoch}, tx.VerifyOnly, topics, version)
	rtx := kmsg.NewAddPartitionsToTxnResponseTransaction()
	rtx.TransactionalID = tx.TransactionalID
	for _, t := range tx.Topics {
		rt := kmsg.NewAddPartitionsToTxnResponseTransactionTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewAddPartitionsToTxnResponseTransactionTopicPartition()
			rp.Partition, rp.ErrorCode = p, codes[t.Topic][p]
			rt.Partitions = append(rt.Partitions, rp)
		}
		rtx.Topics = append(rtx.Topics, rt)
	}
	return rtx
}

// addPartitions adds (or with verifyOnly checks) topics' partitions to p's
// transaction and returns each partition's code, by topic and partition.
func (b *Broker) addPartitions(ctx context.Context, r *request, p coordapi.TxnProducer, verifyOnly bool, topics map[string][]int32, version int16) map[string]map[int32]int16 {
	codes := map[string]map[int32]int16{}
	all := func(code int16) {
		for name, parts := range topics {
			codes[name] = map[int32]int16{}
			for _, pt := range parts {
				codes[name][pt] = code
			}
		}
	}
	if !b.txnAuthorized(r, p.TransactionalID) {
		all(kerr.TransactionalIDAuthorizationFailed.Code)
		return codes
	}
	tps, names, failed := b.txnPartitions(ctx, r, topics)
	if len(failed) > 0 {
		all(kerr.OperationNotAttempted.Code)
		for name, code := range failed {
			for _, pt := range topics[name] {
				codes[name][pt] = code
			}
		}
		return codes
	}
	got, err := b.coord.AddPartitionsToTxn(ctx, coordapi.AddPartitionsRequest{TxnProducer: p, Partitions: tps, VerifyOnly: verifyOnly})
	if err == nil && len(got) != len(tps) {
		err = kerr.UnknownServerError
	}
	if err != nil {
		all(txnErrorCode(err, version, 2))
		return codes
	}
	all(0)
	for i, tp := range tps {
		codes[names[tp]][tp.Partition] = got[i]
	}
	return codes
}
