package node_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/internal/testkit"
	"github.com/floe-io/floe/internal/testkit/floetest"
	"github.com/floe-io/floe/node"
)

// TestShareGroupMetrics reads the share group metrics from a running
// node's /metrics (the embedded coordinator's and broker's) after a kgo
// share consumer read 10 records, releasing one and accepting the rest,
// the released one accepted when it came back; the lag of records produced
// after, bounded by the last stable offset under read_committed (the
// default) and by the high watermark under read_uncommitted; then a raw
// share session whose connection closes is counted as an eviction.
func TestShareGroupMetrics(t *testing.T) {
	n := floetest.StartNode(t, node.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	prod := pinned(t, n.KafkaAddr(), kgo.DefaultProduceTopic("sq"))
	if _, err := kadm.NewClient(prod).CreateTopic(ctx, 1, -1, nil, "sq"); err != nil {
		t.Fatal(err)
	}
	alter := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, "sg"
	cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	cfg.Name, cfg.Value = "share.auto.offset.reset", kmsg.StringPtr("earliest")
	res.Configs = append(res.Configs, cfg)
	alter.Resources = append(alter.Resources, res)
	if ar, err := alter.RequestWith(ctx, prod); err != nil || ar.Resources[0].ErrorCode != 0 {
		t.Fatalf("share.auto.offset.reset: %v %+v", err, ar)
	}
	const records = 10
	for i := range records {
		if err := prod.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "r%d", i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	cons := pinned(t, n.KafkaAddr(), kgo.ShareGroup("sg"), kgo.ConsumeTopics("sq"), kgo.FetchMaxWait(200*time.Millisecond))
	accepted := map[int64]bool{}
	released := false
	for len(accepted) < records {
		pctx, pcancel := context.WithTimeout(ctx, time.Second)
		fs := cons.PollFetches(pctx)
		pcancel()
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d records", len(accepted), records)
		}
		for _, r := range fs.Records() {
			if r.Offset == 3 && !released {
				released = true
				r.Ack(kgo.AckRelease)
				continue
			}
			accepted[r.Offset] = true
			r.Ack(kgo.AckAccept)
		}
	}
	if err := cons.FlushAcks(ctx); err != nil {
		t.Fatal(err)
	}

	group, topic := `group="sg"`, `topic="sq"`
	expect := func(metric string, want float64, labels ...string) {
		t.Helper()
		testkit.CheckFor(t, 10*time.Second, 50*time.Millisecond, func() error {
			v, err := floetest.Metric(n.HTTPAddr(), metric, labels...)
			if err != nil {
				return err
			}
			if v != want {
				return fmt.Errorf("%s%v = %v, want %v", metric, labels, v, want)
			}
			return nil
		})
	}
	for _, tc := range []struct {
		outcome string
		want    float64
	}{
		{"acquired", records}, {"redelivered", 1}, {"acknowledged", records}, {"released", 1},
		{"rejected", 0}, {"gap", 0}, {"archived_limit", 0}, {"archived_log_start", 0}, {"archived_aborted", 0},
	} {
		expect("floe_share_group_records_total", tc.want, group, topic, fmt.Sprintf("outcome=%q", tc.outcome))
	}
	expect("floe_share_group_lock_timeouts_total", 0, group, topic)
	expect("floe_share_group_lag", 0, group, topic, `partition="0"`)
	expect("floe_share_group_lag_sum", 0, group)
	expect("floe_share_group_in_flight_records", 0, group)
	expect("floe_kafka_share_sessions", 1)

	// Five more records, not read: they are lag.
	for i := range 5 {
		if err := prod.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "late%d", i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	cons.Close()
	expect("floe_kafka_share_sessions", 0)
	expect("floe_share_group_lag", 5, group, topic, `partition="0"`)
	expect("floe_share_group_lag_sum", 5, group)

	// Three records of a transaction left open are not lag under
	// read_committed (the default): the bound is the last stable offset.
	txn := pinned(t, n.KafkaAddr(), kgo.DefaultProduceTopic("sq"), kgo.TransactionalID("open-txn"))
	if err := txn.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := txn.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "open%d", i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	expect("floe_share_group_lag", 5, group, topic, `partition="0"`)
	// read_uncommitted counts them.
	alter = kmsg.NewPtrIncrementalAlterConfigsRequest()
	res = kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, "sg"
	cfg = kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	cfg.Name, cfg.Value = "share.isolation.level", kmsg.StringPtr("read_uncommitted")
	res.Configs = append(res.Configs, cfg)
	alter.Resources = append(alter.Resources, res)
	if ar, err := alter.RequestWith(ctx, prod); err != nil || ar.Resources[0].ErrorCode != 0 {
		t.Fatalf("share.isolation.level: %v %+v", err, ar)
	}
	expect("floe_share_group_lag", 8, group, topic, `partition="0"`)
	expect("floe_share_group_lag_sum", 8, group)

	// A share session whose connection closes is evicted.
	evicted, err := floetest.Metric(n.HTTPAddr(), "floe_kafka_share_session_evictions_total")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := kgo.NewClient(kgo.SeedBrokers(n.KafkaAddr()))
	if err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrShareFetchRequest()
	req.GroupID, req.MemberID = kmsg.StringPtr("sg"), kmsg.StringPtr("raw-member")
	req.ShareSessionEpoch, req.MaxRecords, req.BatchSize = 0, 1, 1
	if _, err := req.RequestWith(ctx, raw); err != nil {
		raw.Close()
		t.Fatal(err)
	}
	expect("floe_kafka_share_sessions", 1)
	raw.Close()
	expect("floe_kafka_share_sessions", 0)
	expect("floe_kafka_share_session_evictions_total", evicted+1)
}
