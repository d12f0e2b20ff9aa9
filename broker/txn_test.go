package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/coordapi"
)

// TestAddPartitionsToTxnVersions: every served version adds partitions to
// the producer's transaction, in the v0-v3 form and the batched v4+ one; an
// unknown topic fails its partitions and the others are not attempted; a
// fenced epoch is PRODUCER_FENCED, INVALID_PRODUCER_EPOCH before v2.
func TestAddPartitionsToTxnVersions(t *testing.T) {
	c := newTestCoordinator(t)
	createTopic(t, c, "t", 2, nil)
	b := newAdminBroker(t, c)
	for _, v := range servedVersions(t, kmsg.AddPartitionsToTxn) {
		id := "txn-" + string(rune('a'+v))
		p, err := c.InitProducerID(t.Context(), coordapi.InitProducerIDRequest{TransactionalID: &id, TimeoutMs: 60000, ProducerID: -1, ProducerEpoch: -1})
		if err != nil {
			t.Fatal(err)
		}
		add := func(epoch int16, topics map[string][]int32) map[string]map[int32]int16 {
			req := kmsg.NewPtrAddPartitionsToTxnRequest()
			got := map[string]map[int32]int16{}
			if v < 4 {
				req.TransactionalID, req.ProducerID, req.ProducerEpoch = id, p.ProducerID, epoch
				for name, parts := range topics {
					req.Topics = append(req.Topics, kmsg.AddPartitionsToTxnRequestTopic{Topic: name, Partitions: parts})
				}
				resp := serveVersion[*kmsg.AddPartitionsToTxnResponse](t, b, req, v)
				for _, rt := range resp.Topics {
					got[rt.Topic] = map[int32]int16{}
					for _, rp := range rt.Partitions {
						got[rt.Topic][rp.Partition] = rp.ErrorCode
					}
				}
				return got
			}
			tx := kmsg.NewAddPartitionsToTxnRequestTransaction()
			tx.TransactionalID, tx.ProducerID, tx.ProducerEpoch = id, p.ProducerID, epoch
			for name, parts := range topics {
				tx.Topics = append(tx.Topics, kmsg.AddPartitionsToTxnRequestTransactionTopic{Topic: name, Partitions: parts})
			}
			req.Transactions = append(req.Transactions, tx)
			resp := serveVersion[*kmsg.AddPartitionsToTxnResponse](t, b, req, v)
			for _, rtx := range resp.Transactions {
				for _, rt := range rtx.Topics {
					got[rt.Topic] = map[int32]int16{}
					for _, rp := range rt.Partitions {
						got[rt.Topic][rp.Partition] = rp.ErrorCode
					}
				}
			}
			return got
		}
		if got := add(0, map[string][]int32{"t": {0, 1}}); got["t"][0] != 0 || got["t"][1] != 0 {
			t.Errorf("v%d: add: %v", v, got)
		}
		got := add(0, map[string][]int32{"t": {0}, "nope": {0}})
		if got["nope"][0] != kerr.UnknownTopicOrPartition.Code || got["t"][0] != kerr.OperationNotAttempted.Code {
			t.Errorf("v%d: unknown topic: %v", v, got)
		}
		fenced := kerr.ProducerFenced.Code
		if v < 2 {
			fenced = kerr.InvalidProducerEpoch.Code
		}
		if got := add(5, map[string][]int32{"t": {0}}); got["t"][0] != fenced {
			t.Errorf("v%d: fenced epoch: %v, want %d", v, got, fenced)
		}
	}
}
