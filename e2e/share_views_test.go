package e2e

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/internal/testkit"
	"github.com/floe-io/floe/internal/testkit/floetest"
)

// TestShareGroupOnView reads a hierarchical view ("telemetry/a") with two
// franz-go share consumers of one share group (issue 42: share groups work
// with hierarchical views): the base topic's two partitions hold records of
// keys a, b and c, in batches of one key and mixed ones. Every record of
// key a comes exactly once (delivery count 1), no record of another key
// ever comes, and each view partition's share-partition start offset
// reaches its base partition's high watermark: the other keys' offsets,
// acquired with the view's and cut out of the batches by the broker, are
// acknowledged as gaps and nothing stays in flight. Before, the group was
// assigned nothing and its consumers polled nothing, with no error.
func TestShareGroupOnView(t *testing.T) {
	c := floetest.RunCluster(t, 1)
	addr := c.Brokers[0].KafkaAddr
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const base, view, group = "telemetry", "telemetry/a", "gv"
	cl := pinnedClient(t, addr, kgo.ProducerLinger(20*time.Millisecond), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	adm := kadm.NewClient(cl)
	resp, err := adm.CreateTopic(ctx, 2, -1, map[string]*string{"hierarchical.enabled": kadm.StringPtr("true")}, base)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatal(err)
	}
	type at struct {
		partition int32
		offset    int64
	}
	want := map[at]string{} // key a's records, by where they are: their values
	n := 0
	for round := range 8 {
		// Mixed batches, then a batch of a alone and one of b alone.
		var recs []*kgo.Record
		for i := range 12 {
			key := string(rune('a' + (i+round)%3))
			recs = append(recs, &kgo.Record{Topic: base, Partition: int32(i % 2), Key: []byte(key), Value: fmt.Appendf(nil, "%s-%d", key, n)})
			n++
		}
		for _, key := range []string{"a", "b"} {
			for i := range 4 {
				recs = append(recs, &kgo.Record{Topic: base, Partition: int32(round % 2), Key: []byte(key), Value: fmt.Appendf(nil, "%s-%d-%d", key, n, i)})
			}
			if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
				t.Fatal(err)
			}
			for _, r := range recs {
				if string(r.Key) == "a" {
					want[at{r.Partition, r.Offset}] = string(r.Value)
				}
			}
			recs = nil
			n++
		}
	}
	ends, err := adm.ListEndOffsets(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	hw := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) { hw[o.Partition] = o.Offset })
	if len(hw) != 2 || hw[0] == 0 || hw[1] == 0 {
		t.Fatalf("base high watermarks %v", hw)
	}

	setShareAutoOffsetReset(t, ctx, cl, group)
	var (
		mu         sync.Mutex
		got        = map[at]int{} // deliveries of each record of the view
		wrong      []string
		deliveries int
	)
	poll := func(share *kgo.Client) error {
		pctx, pcancel := context.WithTimeout(ctx, time.Second)
		fs := share.PollFetches(pctx)
		pcancel()
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) {
				ferr = err
			}
		})
		if ferr != nil {
			return fmt.Errorf("share fetch: %w", ferr)
		}
		mu.Lock()
		for _, r := range fs.Records() {
			deliveries++
			k := at{r.Partition, r.Offset}
			switch {
			case r.Topic != view || string(r.Key) != "a" || want[k] != string(r.Value):
				wrong = append(wrong, fmt.Sprintf("%s[%d]@%d key %q value %q", r.Topic, r.Partition, r.Offset, r.Key, r.Value))
			case r.DeliveryCount() != 1:
				wrong = append(wrong, fmt.Sprintf("%d@%d delivered with count %d", r.Partition, r.Offset, r.DeliveryCount()))
			}
			got[k]++
			r.Ack(kgo.AckAccept)
		}
		mu.Unlock()
		return share.FlushAcks(ctx)
	}
	spso := func() (map[int32]int64, error) {
		req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
		g := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
		g.GroupID = group
		rt := kmsg.NewDescribeShareGroupOffsetsRequestGroupTopic()
		rt.Topic, rt.Partitions = view, []int32{0, 1}
		g.Topics = append(g.Topics, rt)
		req.Groups = append(req.Groups, g)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return nil, err
		}
		if len(resp.Groups) != 1 || len(resp.Groups[0].Topics) != 1 {
			return nil, fmt.Errorf("DescribeShareGroupOffsets answered %+v", resp)
		}
		out := map[int32]int64{}
		for _, p := range resp.Groups[0].Topics[0].Partitions {
			if p.ErrorCode != 0 || p.StartOffset < 0 {
				return nil, fmt.Errorf("DescribeShareGroupOffsets of partition %d: code %d, start %d", p.Partition, p.ErrorCode, p.StartOffset)
			}
			out[p.Partition] = p.StartOffset
		}
		return out, nil
	}

	shares := []*kgo.Client{
		pinnedClient(t, addr, kgo.ShareGroup(group), kgo.ConsumeTopics(view), kgo.FetchMaxWait(500*time.Millisecond)),
		pinnedClient(t, addr, kgo.ShareGroup(group), kgo.ConsumeTopics(view), kgo.FetchMaxWait(500*time.Millisecond)),
	}
	testkit.CheckFor(t, 60*time.Second, time.Millisecond, func() error {
		errs := make([]error, len(shares))
		var wg sync.WaitGroup
		for i, share := range shares {
			wg.Go(func() { errs[i] = poll(share) })
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
		starts, err := spso()
		if err != nil {
			return err
		}
		for p, end := range hw {
			if starts[p] < end {
				mu.Lock()
				defer mu.Unlock()
				return fmt.Errorf("partition %d: share-partition start offset %d, base high watermark %d (%d of %d records delivered)",
					p, starts[p], end, len(got), len(want))
			}
		}
		return nil
	})
	mu.Lock()
	defer mu.Unlock()
	if len(wrong) > 0 {
		t.Errorf("%d wrong deliveries, the first: %v", len(wrong), wrong[:min(len(wrong), 5)])
	}
	for k := range want {
		if got[k] != 1 {
			t.Errorf("record %d@%d delivered %d times", k.partition, k.offset, got[k])
		}
	}
	t.Logf("%d records of key a out of %d offsets delivered once each by %d consumers (%d deliveries); the share-partition start offsets reached %v",
		len(want), hw[0]+hw[1], len(shares), deliveries, hw)
}
