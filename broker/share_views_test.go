package broker

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/coordapi"
)

// TestShareFetchView: a share group on a hierarchical view ("hv/KEY") is
// assigned the view's partition under the view's id, and a ShareFetch on
// it acquires the base partition's offsets from its log start while the
// records sent are only the view's key's: a batch of other keys is left
// out, a mixed one is cut to the key (filterView), and the client
// acknowledges what is missing as gaps. Before, the group was assigned
// nothing and fetched nothing, silently.
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
		key, records, batches string
	}{
		{"a", "[2:a 4:a 5:a 6:a]", "[2-4 5-6]"},
		{"b", "[0:b 1:b 3:b]", "[0-1 2-4 5-6]"}, // the last batch kept bare
		{"z", "[]", "[5-6]"},
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
			if p.ErrorCode != 0 || fmt.Sprint(acquired) != "[0-6(1)]" {
				t.Fatalf("partition %v, acquired %v; want 0-6 once", kerr.ErrorForCode(p.ErrorCode), acquired)
			}
			if got := fmt.Sprint(recs); got != tc.records && !(len(recs) == 0 && tc.records == "[]") || fmt.Sprint(batches) != tc.batches {
				t.Errorf("records %v in batches %v, want %s in %s", recs, batches, tc.records, tc.batches)
			}
		})
	}
}
