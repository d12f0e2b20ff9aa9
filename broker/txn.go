package broker

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/coordapi"
)

// Transactions: every broker serves every transactional id (FindCoordinator
// names the broker asked, as for groups) and forwards the transaction APIs
// to the coordinator, which owns their state (coordinator/txn.go).

// txnErrorCode maps a transaction coordinator error to the code a
// client's version of the API knows: PRODUCER_FENCED is
// INVALID_PRODUCER_EPOCH before fencedSince (KIP-588); a failure without a
// Kafka code (the coordinator did not answer) is COORDINATOR_NOT_AVAILABLE,
// which clients retry.
func txnErrorCode(err error, version, fencedSince int16) int16 {
	if err == nil {
		return 0
	}
	var ke *kerr.Error
	if !errors.As(err, &ke) {
		return kerr.CoordinatorNotAvailable.Code
	}
	if ke == kerr.ProducerFenced && version < fencedSince {
		return kerr.InvalidProducerEpoch.Code
	}
	return ke.Code
}

// txnAuthorized reports whether r's principal may write with transactional
// id id (TRANSACTIONAL_ID WRITE).
func (b *Broker) txnAuthorized(r *request, id string) bool {
	return b.authorized(r, kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTransactionalId, id)
}

// txnPartitions resolves a transaction's topics by name: the partitions to
// ask the coordinator about, and for each topic the code to answer every
// one of its partitions with when it cannot be asked (0 when it can).
func (b *Broker) txnPartitions(ctx context.Context, r *request, topics map[string][]int32) (tps []coordapi.TopicPartition, names map[coordapi.TopicPartition]string, codes map[string]int16) {
	names = map[coordapi.TopicPartition]string{}
	codes = map[string]int16{}
	for name, parts := range topics {
		if !b.authorizedTopic(r, kmsg.ACLOperationWrite, name) {
			codes[name] = kerr.TopicAuthorizationFailed.Code
			continue
		}
		t, err := b.topics.ByName(ctx, name)
		switch {
		case err != nil:
			codes[name] = coordapi.ErrorCode(err)
			continue
		case t.View != nil:
			codes[name] = kerr.InvalidTopicException.Code
			continue
		}
		for _, p := range parts {
			tp := coordapi.TopicPartition{TopicID: t.ID, Partition: p}
			tps = append(tps, tp)
			names[tp] = name
		}
	}
	return tps, names, codes
}
