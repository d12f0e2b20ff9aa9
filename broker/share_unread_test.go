package broker

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/objectstore"
)

// unreadableCoord is a coordinator whose FindBatches, while broken is set,
// answers batches in an object that does not exist, so that the broker
// cannot read their bytes.
type unreadableCoord struct {
	coordapi.Coordinator
	broken atomic.Bool
}

func (c *unreadableCoord) FindBatches(ctx context.Context, req coordapi.FindBatchesRequest) (coordapi.FindBatchesResponse, error) {
	found, err := c.Coordinator.FindBatches(ctx, req)
	if c.broken.Load() {
		for i := range found.Batches {
			found.Batches[i].ObjectKey = "wal/gone"
		}
	}
	return found, err
}

// TestShareFetchUnreadable: records a share group acquired but whose bytes
// the broker could not read are answered as the partition's error, and go
// back to the coordinator at once (internal acknowledgement type 6), their
// delivery count down again: the next fetch gets them at their first
// delivery, instead of after their 30 s lock.
func TestShareFetchUnreadable(t *testing.T) {
	store := objectstore.NewMemory()
	coord := newTestCoordinator(t)
	uc := &unreadableCoord{Coordinator: coord}
	e := &aclEnv{t: t, store: store, coord: coord}
	e.g = newTestGroups(t, uc) // share acquisitions find batches through uc
	e.b, e.addr = e.startBroker(1, coord, func(o *Options) { o.ACLsEnabled = false })
	e.topic("un", 1, nil)
	cl := e.client("c")
	setShareReset(t, cl, "sg")
	for i := range 3 {
		if err := produceOne(t, cl, "un", strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
	}
	topicID := e.topicID("un")
	wantCode(t, "join", send[*kmsg.ShareGroupHeartbeatResponse](t, cl, shareHeartbeatReq("sg", "m1", 0, "un")).ErrorCode, nil)

	uc.broken.Store(true)
	r := send[*kmsg.ShareFetchResponse](t, cl, shareFetchReq("m1", 0, topicID))
	wantCode(t, "share fetch", r.ErrorCode, nil)
	if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
		t.Fatalf("unreadable fetch: %+v", r)
	}
	if p := r.Topics[0].Partitions[0]; p.ErrorCode == 0 || len(p.AcquiredRecords) != 0 {
		t.Fatalf("unreadable fetch answered error %d with acquired %+v, want an error and none", p.ErrorCode, p.AcquiredRecords)
	}

	uc.broken.Store(false)
	epoch := int32(1)
	var got []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord
	checkFor(t, 10*time.Second, func() bool {
		r := send[*kmsg.ShareFetchResponse](t, cl, shareFetchReq("m1", epoch, topicID))
		epoch++
		for _, tp := range r.Topics {
			for _, p := range tp.Partitions {
				got = append(got, p.AcquiredRecords...)
			}
		}
		return len(got) > 0
	})
	if len(got) != 1 || got[0].FirstOffset != 0 || got[0].LastOffset != 2 || got[0].DeliveryCount != 1 {
		t.Fatalf("after the read failure: %+v, want 0-2 at delivery 1", got)
	}
}
