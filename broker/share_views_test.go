package broker

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/objectstore"
	"github.com/floe-io/floe/record"
)

// TestShareFetchView: a share group on a hierarchical view ("hv/KEY") is
// assigned the view's partition under the view's id, and a ShareFetch on
// it acquires the base partition's batches holding the key (the posting
// index names them), the offsets before, between and after them archived
// at once (the share-partition start offset moves past them), while the
// records sent are only the key's: a mixed batch is cut to the key
// (filterView), and the client acknowledges what is missing as gaps.
// Before, the group was assigned nothing and fetched nothing, silently.
func TestShareFetchView(t *testing.T) {
	e := newACLEnv(t, func(o *Options) { o.ACLsEnabled = false })
	e.topic("hv", 1, map[string]*string{coordapi.ConfigHierarchicalEnabled: kmsg.StringPtr("true")})
	cl := e.client("c")
	// Three batches: 0-1 all b, 2-4 mixed, 5-6 all a.
	for _, keys := range []string{"b b", "a b a", "a a"} {
		var rs []*kgo.Record
		for _, k := range strings.Fields(keys) {
			rs = append(rs, &kgo.Record{Topic: "hv", Key: []byte(k), Value: []byte("v")})
		}
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		err := cl.ProduceSync(ctx, rs...).FirstErr()
		cancel()
		if err != nil {
			t.Fatalf("produce: %v", err)
		}
	}

	for _, tc := range []struct {
		key, acquired, records, batches string
		spso                            int64
	}{
		{"a", "[2-6(1)]", "[2:a 4:a 5:a 6:a]", "[2-4 5-6]", 2},
		{"b", "[0-4(1)]", "[0:b 1:b 3:b]", "[0-1 2-4]", 0}, // 5-6 archived
		{"z", "[]", "[]", "[]", 7},
	} {
		t.Run(tc.key, func(t *testing.T) {
			group, view := "sv-"+tc.key, "hv/"+tc.key
			setShareReset(t, cl, group)
			id := e.topicID(view)
			hb := send[*kmsg.ShareGroupHeartbeatResponse](t, cl, shareHeartbeatReq(group, "m", 0, view))
			if hb.ErrorCode != 0 || hb.Assignment == nil || len(hb.Assignment.TopicPartitions) != 1 || hb.Assignment.TopicPartitions[0].TopicID != id {
				t.Fatalf("join: %v, assignment %+v, want the view's id %x", kerr.ErrorForCode(hb.ErrorCode), hb.Assignment, id[:4])
			}
			req := shareFetchReq("m", 0, id)
			req.GroupID = kmsg.StringPtr(group)
			r := send[*kmsg.ShareFetchResponse](t, cl, req)
			if r.ErrorCode != 0 || len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
				t.Fatalf("share fetch: %v %+v", kerr.ErrorForCode(r.ErrorCode), r)
			}
			p := r.Topics[0].Partitions[0]
			var acquired []string
			for _, a := range p.AcquiredRecords {
				acquired = append(acquired, fmt.Sprintf("%d-%d(%d)", a.FirstOffset, a.LastOffset, a.DeliveryCount))
			}
			recs, batches := viewOffsets(t, p.Records)
			if p.ErrorCode != 0 || fmt.Sprint(acquired) != tc.acquired {
				t.Fatalf("partition %v, acquired %v; want %s", kerr.ErrorForCode(p.ErrorCode), acquired, tc.acquired)
			}
			if fmt.Sprint(recs) != tc.records || fmt.Sprint(batches) != tc.batches {
				t.Errorf("records %v in batches %v, want %s in %s", recs, batches, tc.records, tc.batches)
			}
			d := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
			dg := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
			dg.GroupID = group
			dt := kmsg.NewDescribeShareGroupOffsetsRequestGroupTopic()
			dt.Topic, dt.Partitions = view, []int32{0}
			dg.Topics = append(dg.Topics, dt)
			d.Groups = append(d.Groups, dg)
			dr := send[*kmsg.DescribeShareGroupOffsetsResponse](t, cl, d)
			if len(dr.Groups) != 1 || len(dr.Groups[0].Topics) != 1 || len(dr.Groups[0].Topics[0].Partitions) != 1 ||
				dr.Groups[0].Topics[0].Partitions[0].StartOffset != tc.spso {
				t.Errorf("described %+v, want start offset %d", dr.Groups, tc.spso)
			}
		})
	}
}

// TestShareFetchViewSegments: a share group on a view whose base
// partition's start lies in a tiered segment reads the batches inside the
// segment from the base topic, as for a topic: the view's key's records
// come once each, from the segment and after it, and no other key's.
func TestShareFetchViewSegments(t *testing.T) {
	store := objectstore.NewMemory()
	coord := newTestCoordinator(t)
	tc := &tieringCoord{Coordinator: coord}
	e := &aclEnv{t: t, store: store, coord: coord}
	e.g = newTestGroups(t, tc) // share acquisitions find batches through tc
	e.b, e.addr = e.startBroker(1, tc, func(o *Options) { o.ACLsEnabled = false })
	e.topic("tv", 1, map[string]*string{coordapi.ConfigHierarchicalEnabled: kmsg.StringPtr("true")})
	cl := e.client("c")
	setShareReset(t, cl, "sg")
	for i := range 10 { // ten batches of one record, keys a and b in turn
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		err := cl.ProduceSync(ctx, &kgo.Record{Topic: "tv", Key: []byte{"ab"[i%2]}, Value: []byte(strconv.Itoa(i))}).FirstErr()
		cancel()
		if err != nil {
			t.Fatal(err)
		}
	}
	if seg := tc.tier(t, store, e.topicID("tv"), 0, 6); seg.BaseOffset != 0 || seg.LastOffset != 5 {
		t.Fatalf("segment %d-%d, want 0-5", seg.BaseOffset, seg.LastOffset)
	}

	sc := e.client("share", kgo.ShareGroup("sg"), kgo.ConsumeTopics("tv/a"), kgo.FetchMaxWait(200*time.Millisecond))
	seen := map[int64]int32{}
	checkFor(t, 30*time.Second, func() bool {
		pctx, pcancel := context.WithTimeout(t.Context(), time.Second)
		fs := sc.PollFetches(pctx)
		pcancel()
		fs.EachError(func(topic string, p int32, err error) {
			if err != context.DeadlineExceeded {
				t.Fatalf("%s/%d: %v", topic, p, err)
			}
		})
		for _, r := range fs.Records() {
			if r.Topic != "tv/a" || string(r.Key) != "a" || r.Offset%2 != 0 || string(r.Value) != strconv.FormatInt(r.Offset, 10) {
				t.Fatalf("delivered %s@%d key %q value %q", r.Topic, r.Offset, r.Key, r.Value)
			}
			if seen[r.Offset] != 0 || r.DeliveryCount() != 1 {
				t.Fatalf("offset %d delivered again (count %d)", r.Offset, r.DeliveryCount())
			}
			seen[r.Offset] = r.DeliveryCount()
			r.Ack(kgo.AckAccept)
		}
		return len(seen) == 5
	})
	if err := sc.FlushAcks(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// viewOffsets returns "offset:key" of every record in data (forRecords,
// which checks every batch) and each batch's offset range.
func viewOffsets(t *testing.T, data []byte) (recs, batches []string) {
	t.Helper()
	if err := forRecords(data, func(o int64, key string) { recs = append(recs, fmt.Sprintf("%d:%s", o, key)) }); err != nil {
		t.Fatal(err)
	}
	raw, err := record.Split(data)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range raw {
		h, _ := record.ParseHeader(b) // parsed by forRecords already
		batches = append(batches, fmt.Sprintf("%d-%d", h.BaseOffset, h.BaseOffset+int64(h.LastOffsetDelta)))
	}
	return recs, batches
}
