package broker

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/objectstore"
)

// TestFetchRecordsNeverNull: every partition of a Fetch response carries a
// record set, empty rather than null, whatever happened to it (no data yet,
// an error, the response's byte budget spent), at every served version, as
// Apache Kafka does. librdkafka fails the whole response on a null one
// ("invalid MessageSetSize -1") and backs off. Aborted transactions are an
// empty list under read_committed and null under read_uncommitted, as
// Kafka's.
func TestFetchRecordsNeverNull(t *testing.T) {
	b, c := newCoordinatorBroker(t)
	cresp := serveVersion[*kmsg.CreateTopicsResponse](t, b, createTopicsRequest(newTopic("t", 3, 1)), 7)
	if cresp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create: %s", showStr(cresp.Topics[0].ErrorMessage))
	}
	id := coordapi.TopicID(cresp.Topics[0].TopicID)
	store := objectstore.NewMemory()
	b.reads = b.newReads(storeReader{store})
	commitBatches(t, c, store, id, 0, []int64{1000, 1000, 1000})

	for _, v := range servedVersions(t, kmsg.Fetch) {
		for _, isolation := range []int8{0, 1} {
			t.Run(fmt.Sprintf("v%d/isolation%d", v, isolation), func(t *testing.T) {
				req := kmsg.NewPtrFetchRequest()
				req.ReplicaID, req.MaxWaitMillis, req.MinBytes = -1, 0, 1
				// A 1-byte budget: partition 0's batch goes out whole
				// (the first always does) and spends it, so partition
				// 1 is answered without reading.
				req.MaxBytes = 1
				req.IsolationLevel = isolation
				part := func(p int32, offset int64) kmsg.FetchRequestTopicPartition {
					rp := kmsg.NewFetchRequestTopicPartition()
					rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = p, offset, 1<<20, -1
					return rp
				}
				rt := kmsg.NewFetchRequestTopic()
				rt.Topic, rt.TopicID = "t", id
				rt.Partitions = []kmsg.FetchRequestTopicPartition{
					part(2, 7), // past the log end: OFFSET_OUT_OF_RANGE
					part(0, 0), // three records
					part(1, 0), // nothing, and no budget left
					part(9, 0), // no such partition
				}
				missing := kmsg.NewFetchRequestTopic()
				missing.Topic, missing.TopicID = "nope", [16]byte{1}
				missing.Partitions = []kmsg.FetchRequestTopicPartition{part(0, 0)}
				req.Topics = []kmsg.FetchRequestTopic{rt, missing}

				resp := serveVersion[*kmsg.FetchResponse](t, b, req, v)
				if len(resp.Topics) != 2 || len(resp.Topics[0].Partitions) != 4 || len(resp.Topics[1].Partitions) != 1 {
					t.Fatalf("response shape: %+v", resp.Topics)
				}
				unknownTopic := kerr.UnknownTopicOrPartition.Code
				if v >= 13 {
					unknownTopic = kerr.UnknownTopicID.Code
				}
				want := []struct {
					topic, partition int
					code             int16
					hwm              int64
					records          bool
				}{
					{0, 0, kerr.OffsetOutOfRange.Code, 0, false},
					{0, 1, 0, 3, true},
					{0, 2, 0, 0, false},
					{0, 3, kerr.UnknownTopicOrPartition.Code, -1, false},
					{1, 0, unknownTopic, -1, false},
				}
				for _, w := range want {
					sp := resp.Topics[w.topic].Partitions[w.partition]
					what := fmt.Sprintf("topic %d partition %d", w.topic, sp.Partition)
					if sp.ErrorCode != w.code || sp.HighWatermark != w.hwm {
						t.Errorf("%s: code %d hwm %d, want code %d hwm %d", what, sp.ErrorCode, sp.HighWatermark, w.code, w.hwm)
					}
					if sp.RecordBatches == nil {
						t.Errorf("%s: null records, want an empty record set", what)
					}
					if got := len(sp.RecordBatches) > 0; got != w.records {
						t.Errorf("%s: %d bytes of records, want records %v", what, len(sp.RecordBatches), w.records)
					}
					if isolation == 1 && (sp.AbortedTransactions == nil || len(sp.AbortedTransactions) != 0) {
						t.Errorf("%s: aborted transactions %v under read_committed, want an empty list", what, sp.AbortedTransactions)
					}
					if isolation == 0 && sp.AbortedTransactions != nil {
						t.Errorf("%s: aborted transactions %v under read_uncommitted, want null", what, sp.AbortedTransactions)
					}
				}
			})
		}
	}
}
