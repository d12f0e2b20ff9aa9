package e2e

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/internal/testkit"
	"github.com/floe-io/floe/internal/testkit/floetest"
)

// TestShareGroupCompactedTopic reads a compacted topic, once compacted,
// with franz-go share consumers (issue 42: share groups work with
// compaction): the offsets compaction removed are gaps in the batches the
// coordinator hands out, which the consumers acknowledge as gaps, so each
// live key comes once with its latest value, and the share-partition start
// offset reaches the end: nothing is left in flight or redelivered.
func TestShareGroupCompactedTopic(t *testing.T) {
	c := floetest.RunClusterWith(t, 0, floetest.ClusterOptions{
		CoordinatorArgs: []string{"--tier-interval", "100ms", "--gc-grace", "10s"},
		BrokerArgs:      []string{"--tier-poll-interval", "50ms"},
	})
	b := c.AddBroker(1)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const topic, group = "share-compacted", "share-compacted-group"
	cl := pinnedClient(t, b.KafkaAddr, kgo.ProducerLinger(0))
	adm := kadm.NewClient(cl)
	resp, err := adm.CreateTopic(ctx, 1, -1, map[string]*string{
		"cleanup.policy": kadm.StringPtr("compact"), "local.retention.ms": kadm.StringPtr("200"),
		"segment.bytes": kadm.StringPtr("1048576"), "min.cleanable.dirty.ratio": kadm.StringPtr("0.2"),
		"delete.retention.ms": kadm.StringPtr("600000"),
	}, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatal(err)
	}
	for r := range compactRounds {
		var recs []*kgo.Record
		for i := range compactKeys {
			v, del, skip := compactRecord(i, r)
			if skip {
				continue
			}
			rec := &kgo.Record{Topic: topic, Key: []byte(compactKey(i)), Value: v}
			if del {
				rec.Value = nil
			}
			recs = append(recs, rec)
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("round %d: %v", r, err)
		}
	}
	end, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	hw := end[topic][0].Offset
	// Compacted: a classic read finds one record per live key.
	testkit.CheckFor(t, 90*time.Second, 200*time.Millisecond, func() error {
		cr, err := readCompacted(t, b.KafkaAddr, topic)
		if err == nil {
			err = cr.checkMain(topic, true)
		}
		return err
	})

	setShareAutoOffsetReset(t, ctx, cl, group)
	share := pinnedClient(t, b.KafkaAddr, kgo.ShareGroup(group), kgo.ConsumeTopics(topic), kgo.FetchMaxWait(500*time.Millisecond))
	got := map[string][]*kgo.Record{}
	deliveries := 0
	spso := func() (int64, error) {
		req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
		g := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
		g.GroupID = group
		rt := kmsg.NewDescribeShareGroupOffsetsRequestGroupTopic()
		rt.Topic, rt.Partitions = topic, []int32{0}
		g.Topics = append(g.Topics, rt)
		req.Groups = append(req.Groups, g)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return 0, err
		}
		if len(resp.Groups) != 1 || len(resp.Groups[0].Topics) != 1 || len(resp.Groups[0].Topics[0].Partitions) != 1 {
			return 0, fmt.Errorf("DescribeShareGroupOffsets answered %+v", resp)
		}
		p := resp.Groups[0].Topics[0].Partitions[0]
		if p.ErrorCode != 0 {
			return 0, fmt.Errorf("DescribeShareGroupOffsets: code %d", p.ErrorCode)
		}
		return p.StartOffset, nil
	}
	testkit.CheckFor(t, 60*time.Second, time.Millisecond, func() error {
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
			t.Fatalf("share fetch: %v", ferr)
		}
		for _, r := range fs.Records() {
			deliveries++
			got[string(r.Key)] = append(got[string(r.Key)], r)
			r.Ack(kgo.AckAccept)
		}
		if err := share.FlushAcks(ctx); err != nil {
			return err
		}
		start, err := spso()
		if err != nil {
			return err
		}
		if start < hw {
			return fmt.Errorf("share-partition start offset %d, high watermark %d (%d deliveries)", start, hw, deliveries)
		}
		return nil
	})
	if err := (compactRead{main: got}).checkMain(topic, true); err != nil {
		t.Fatalf("the share group's records: %v", err)
	}
	n := 0
	for _, recs := range got {
		n += len(recs)
		for _, r := range recs {
			if r.DeliveryCount() != 1 {
				t.Errorf("%s at %d delivered %d times", r.Key, r.Offset, r.DeliveryCount())
			}
		}
	}
	t.Logf("%d records of %d offsets delivered once each; the share-partition start offset reached %d", n, hw, hw)
}
