package broker

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/floe-io/floe/objectstore"
)

// TestShareFetchSegments: a share group reads a partition whose start
// lies only in a tiered segment (the coordinator answers the segment's
// coordinate, and the broker reads the batches inside it, as Fetch does):
// every record comes, the ones in the segment and the ones after it, and
// a record released from the segment comes back with delivery count 2.
func TestShareFetchSegments(t *testing.T) {
	store := objectstore.NewMemory()
	coord := newTestCoordinator(t)
	tc := &tieringCoord{Coordinator: coord}
	e := &aclEnv{t: t, store: store, coord: coord}
	e.g = newTestGroups(t, tc) // share acquisitions find batches through tc
	e.b, e.addr = e.startBroker(1, tc, func(o *Options) { o.ACLsEnabled = false })
	e.topic("ts", 1, nil)
	cl := e.client("c")
	setShareReset(t, cl, "sg")
	for i := range 10 { // ten batches of one record
		if err := produceOne(t, cl, "ts", strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
	}
	id := e.topicID("ts")
	if seg := tc.tier(t, store, id, 0, 6); seg.BaseOffset != 0 || seg.LastOffset != 5 {
		t.Fatalf("segment %d-%d, want 0-5", seg.BaseOffset, seg.LastOffset)
	}

	sc := e.client("share", kgo.ShareGroup("sg"), kgo.ConsumeTopics("ts"), kgo.FetchMaxWait(200*time.Millisecond))
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	type delivery struct {
		offset int64
		count  int32
	}
	seen := map[string][]delivery{}
	for len(seen) < 10 || len(seen["2"]) < 2 {
		if ctx.Err() != nil {
			t.Fatalf("read %v before the deadline, want 0-9 with 2 twice", seen)
		}
		pctx, pcancel := context.WithTimeout(ctx, time.Second)
		fs := sc.PollFetches(pctx)
		pcancel()
		fs.EachError(func(topic string, p int32, err error) {
			if err != context.DeadlineExceeded {
				t.Errorf("%s/%d: %v", topic, p, err)
			}
		})
		for _, r := range fs.Records() {
			v := string(r.Value)
			seen[v] = append(seen[v], delivery{r.Offset, r.DeliveryCount()})
			if v == "2" && len(seen[v]) == 1 {
				r.Ack(kgo.AckRelease)
				continue
			}
			r.Ack(kgo.AckAccept)
		}
	}
	for i := range 10 {
		v := strconv.Itoa(i)
		want := []delivery{{int64(i), 1}}
		if v == "2" {
			want = append(want, delivery{2, 2})
		}
		if got := seen[v]; fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("record %s: deliveries %v, want %v", v, got, want)
		}
	}
	if err := sc.FlushAcks(t.Context()); err != nil {
		t.Logf("flush acks: %v", err)
	}
	checkFor(t, 10*time.Second, func() bool {
		start, lag := shareStart(t, cl, "sg", "ts")
		return start == 10 && lag == 0
	})
}
