package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TxnOffsetCommit: v0-v4. v2+ leader epoch; v3+ flexible, with the
// member id, generation and group.instance.id the group coordinator fences
// on (KIP-447); v4 only adds TRANSACTION_ABORTABLE as an answer (KIP-890).
// v5 (transactions v2: the request adds the group to the transaction
// itself) and v6 (topics by id) are not served: clients send them only to
// a broker that advertises transaction.version 2. The offsets become the
// producer's pending offsets of the group, committed or dropped when the
// transaction ends. As Kafka: TRANSACTIONAL_ID WRITE on the transactional
// id (else every partition is TRANSACTIONAL_ID_AUTHORIZATION_FAILED), then
// GROUP READ (GROUP_AUTHORIZATION_FAILED), then TOPIC READ per topic
// (TOPIC_AUTHORIZATION_FAILED); partitions of unknown topics are answered
// UNKNOWN_TOPIC_OR_PARTITION here, and the group coordinator sees only the
// rest (none: it is not asked).
func init() { register(kmsg.TxnOffsetCommit, 0, 4, (*Broker).handleTxnOffsetCommit) }

func (b *Broker) handleTxnOffsetCommit(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.TxnOffsetCommitRequest)
	topics := make([]string, len(req.Topics))
	parts := make([][]int32, len(req.Topics))
	codes := make([][]int16, len(req.Topics))
	for i, t := range req.Topics {
		topics[i] = t.Topic
		codes[i] = make([]int16, len(t.Partitions))
		for _, p := range t.Partitions {
			parts[i] = append(parts[i], p.Partition)
		}
	}
	all := func(code int16) [][]int16 {
		for i := range codes {
			for j := range codes[i] {
				codes[i][j] = code
			}
		}
		return codes
	}
	switch {
	case !b.authorized(r, kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTransactionalId, req.TransactionalID):
		codes = all(kerr.TransactionalIDAuthorizationFailed.Code)
	case !b.authorized(r, kmsg.ACLOperationRead, kmsg.ACLResourceTypeGroup, req.Group):
		codes = all(kerr.GroupAuthorizationFailed.Code)
	default:
		var keep [][]int
		var ids [][16]byte
		codes, keep, ids = b.knownPartitions(ctx, r, kmsg.ACLOperationRead, topics, parts)
		b.txnOffsetCommit(ctx, req, codes, keep, ids)
	}
	resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	for i, t := range req.Topics {
		st := kmsg.NewTxnOffsetCommitResponseTopic()
		st.Topic = t.Topic
		for j, p := range t.Partitions {
			sp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			sp.Partition = p.Partition
			sp.ErrorCode = codes[i][j]
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}

// txnOffsetCommit passes the partitions keep names (keep[i] indexes
// req.Topics[i].Partitions; ids[i] is the topic's id) to the group
// coordinator and puts its answers in codes; COORDINATOR_NOT_AVAILABLE when
// it does not answer.
func (b *Broker) txnOffsetCommit(ctx context.Context, req *kmsg.TxnOffsetCommitRequest, codes [][]int16, keep [][]int, ids [][16]byte) {
	if code := b.groupsError(); code != 0 {
		setKept(codes, keep, code)
		return
	}
	valid := *req
	var from []int
	valid.Topics, from = keptTopics(keep, func(i int, kept []int) kmsg.TxnOffsetCommitRequestTopic {
		vt := req.Topics[i]
		vt.Partitions = nil
		vt.TopicID = ids[i] // stored with the offsets: a recreated topic starts afresh
		for _, j := range kept {
			vt.Partitions = append(vt.Partitions, req.Topics[i].Partitions[j])
		}
		return vt
	})
	if len(valid.Topics) == 0 {
		return
	}
	gr, err := b.groups.TxnOffsetCommit(ctx, &valid)
	if err != nil {
		setKept(codes, keep, b.groupsFailed("TxnOffsetCommit", err))
		return
	}
	for k, t := range gr.Topics {
		for n, p := range t.Partitions {
			putAnswer(codes, keep, from, k, n, p.ErrorCode)
		}
	}
}
