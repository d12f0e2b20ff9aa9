package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/floe-io/floe/coordinator/rpc"
	"github.com/floe-io/floe/internal/testkit"
	"github.com/floe-io/floe/internal/testkit/floetest"
	"github.com/floe-io/floe/internal/testkit/natstest"
	"github.com/floe-io/floe/table"
)

// TestTableRetentionOnMinIO: table.retention.ms through real processes on
// MinIO (a coordinator process, a broker, the maintenance job claimed
// over NATS): records older than the table's retention leave the table in
// a delete snapshot, newer ones stay, the covered offsets stay where the
// table job put them, and the topic keeps every record.
func TestTableRetentionOnMinIO(t *testing.T) {
	c := floetest.RunClusterWith(t, 1, floetest.ClusterOptions{
		CoordinatorArgs: []string{"--tier-interval", "200ms", "--table-interval", "1s", "--table-maintain-interval", "1s"},
		BrokerArgs:      []string{"--tier-poll-interval", "100ms"},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const topic = "aging"
	adm := kadm.NewClient(pinnedClient(t, c.Brokers[0].KafkaAddr))
	if _, err := adm.CreateTopic(ctx, 2, -1, map[string]*string{
		"table.enabled": kadm.StringPtr("true"), "table.retention.ms": kadm.StringPtr("604800000"),
		"local.retention.ms": kadm.StringPtr("300"), "retention.ms": kadm.StringPtr("-1"),
	}, topic); err != nil {
		t.Fatal(err)
	}
	const old, recent = 200, 100
	now := time.Now()
	var recs []*kgo.Record
	for i := range old + recent {
		ts := now.Add(-9 * 24 * time.Hour)
		if i >= old {
			ts = now
		}
		recs = append(recs, &kgo.Record{Topic: topic, Key: fmt.Appendf(nil, "k%d", i), Value: fmt.Appendf(nil, "%d", i), Timestamp: ts})
	}
	if err := pinnedClient(t, c.Brokers[0].KafkaAddr).ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}

	nc := natstest.Connect(t, c.NATS)
	cat := rpc.NewClient(nc, floetest.ClusterName, rpc.ClientOptions{Timeout: 5 * time.Second, Logger: testkit.Logger()}).TableCatalog()
	tb, err := table.New(table.Options{Catalog: cat, Store: c.MinIO.Store(t), Root: "s3://" + c.MinIO.Bucket, Prefix: "tables"})
	if err != nil {
		t.Fatal(err)
	}
	id := table.Ident{Namespace: []string{"floe"}, Name: topic}
	testkit.CheckFor(t, time.Minute, 200*time.Millisecond, func() error {
		covered, err := tb.Covered(ctx, id)
		if err != nil {
			return err
		}
		var lag error
		ends.Each(func(o kadm.ListedOffset) {
			if covered[o.Partition] != o.Offset {
				lag = fmt.Errorf("partition %d covered to %d of %d", o.Partition, covered[o.Partition], o.Offset)
			}
		})
		if lag != nil {
			return lag
		}
		tbl, err := tb.Load(ctx, id)
		if err != nil {
			return err
		}
		at, err := tbl.Scan().ToArrowTable(ctx)
		if err != nil {
			return err
		}
		defer at.Release()
		if at.NumRows() != recent {
			return fmt.Errorf("%d rows, want the %d recent ones", at.NumRows(), recent)
		}
		return nil
	})
	tbl, err := tb.Load(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	deletes := 0
	for _, s := range tbl.Metadata().Snapshots() {
		if s.Summary != nil && s.Summary.Operation == "delete" {
			deletes++
		}
	}
	if deletes == 0 {
		t.Fatal("no delete snapshot in the table's history")
	}
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	starts.Each(func(o kadm.ListedOffset) {
		if o.Offset != 0 {
			t.Errorf("partition %d's log start is %d: table.retention.ms deleted from the topic", o.Partition, o.Offset)
		}
	})
}
