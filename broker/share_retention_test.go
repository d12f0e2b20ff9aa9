package broker

import (
	"maps"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestShareDeleteRecords: DeleteRecords past records a share group holds
// (m1 acquired 0-5 and gave 2-3 back) and past records it never took:
// nothing below the new log start is delivered afterwards, to a new
// consumer or to m1 after its acknowledgements (skipped below the start,
// without error), and the share-partition starts at the log start.
func TestShareDeleteRecords(t *testing.T) {
	e := newACLEnv(t, func(o *Options) { o.ACLsEnabled = false })
	e.topic("dr", 1, nil)
	cl := e.client("c")
	setShareReset(t, cl, "sg")
	for i := range 10 { // ten batches of one record
		if err := produceOne(t, cl, "dr", strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
	}
	topicID := e.topicID("dr")
	wantCode(t, "join", send[*kmsg.ShareGroupHeartbeatResponse](t, cl, shareHeartbeatReq("sg", "m1", 0, "dr")).ErrorCode, nil)
	fetch := func(member string, epoch, maxRecords int32, acks ...kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch) []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord {
		t.Helper()
		req := shareFetchReq(member, epoch, topicID, acks...)
		req.MaxRecords, req.BatchSize = maxRecords, maxRecords
		r := send[*kmsg.ShareFetchResponse](t, cl, req)
		wantCode(t, "share fetch", r.ErrorCode, nil)
		var out []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord
		for _, tp := range r.Topics {
			for _, p := range tp.Partitions {
				wantCode(t, "share fetch partition", p.ErrorCode, nil)
				wantCode(t, "share fetch acks", p.AcknowledgeErrorCode, nil)
				out = append(out, p.AcquiredRecords...)
			}
		}
		return out
	}
	ack := func(first, last int64, typ int8) kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch {
		return kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{FirstOffset: first, LastOffset: last, AcknowledgeTypes: []int8{typ}}
	}
	if got := fetch("m1", 0, 6); len(got) != 1 || got[0].FirstOffset != 0 || got[0].LastOffset != 5 {
		t.Fatalf("m1 acquired %+v, want 0-5", got)
	}
	fetch("m1", 1, 0, ack(2, 3, 2)) // release 2-3

	dr, err := kadm.NewClient(cl).DeleteRecords(t.Context(), kadm.Offsets{"dr": {0: {Topic: "dr", Partition: 0, At: 5}}})
	if err != nil || dr.Error() != nil {
		t.Fatalf("delete records: %v %v", err, dr.Error())
	}

	// A new consumer reads 6-9 (5 is m1's), nothing below 5.
	seen := shareReadAll(t, e, "sg", "dr", 4)
	if got := slices.Sorted(maps.Keys(seen)); !slices.Equal(got, []string{"6", "7", "8", "9"}) {
		t.Fatalf("after DeleteRecords to 5 the share consumer read %v, want 6-9", got)
	}
	// m1 accepts what it held, across the log start, without error;
	// nothing comes back to it.
	if got := fetch("m1", 2, 10, ack(0, 1, 1), ack(4, 5, 1)); len(got) != 0 {
		t.Fatalf("m1 acquired %+v after its acks, want nothing", got)
	}
	checkFor(t, 10*time.Second, func() bool {
		start, lag := shareStart(t, cl, "sg", "dr")
		return start == 10 && lag == 0
	})
}
