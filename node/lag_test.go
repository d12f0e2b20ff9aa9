package node_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/floe-io/floe/internal/testkit"
	"github.com/floe-io/floe/internal/testkit/floetest"
	"github.com/floe-io/floe/node"
)

// TestConsumerLagMetric commits offsets behind the high watermark and reads
// the lag from the running node's /metrics (the embedded coordinator's).
func TestConsumerLagMetric(t *testing.T) {
	n := floetest.StartNode(t, node.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl := pinned(t, n.KafkaAddr(), kgo.DefaultProduceTopic("lagged"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	admin := kadm.NewClient(cl)
	if _, err := admin.CreateTopic(ctx, 2, -1, nil, "lagged"); err != nil {
		t.Fatal(err)
	}
	for p := range int32(2) {
		for i := range 10 {
			if err := cl.ProduceSync(ctx, &kgo.Record{Partition: p, Value: fmt.Appendf(nil, "r%d", i)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	var offsets kadm.Offsets
	offsets.AddOffset("lagged", 0, 3, -1)
	offsets.AddOffset("lagged", 1, 10, -1)
	if _, err := admin.CommitOffsets(ctx, "g1", offsets); err != nil {
		t.Fatal(err)
	}
	var one kadm.Offsets
	one.AddOffset("lagged", 1, 4, -1)
	if _, err := admin.CommitOffsets(ctx, "g2", one); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		metric string
		labels []string
		want   float64
	}{
		{"floe_consumer_group_lag", []string{`group="g1"`, `topic="lagged"`, `partition="0"`}, 7},
		{"floe_consumer_group_lag", []string{`group="g1"`, `topic="lagged"`, `partition="1"`}, 0},
		{"floe_consumer_group_lag", []string{`group="g2"`, `topic="lagged"`, `partition="1"`}, 6},
		{"floe_consumer_group_lag_sum", []string{`group="g1"`}, 7},
		{"floe_consumer_group_lag_sum", []string{`group="g2"`}, 6},
	} {
		testkit.CheckFor(t, 10*time.Second, 50*time.Millisecond, func() error {
			v, err := floetest.Metric(n.HTTPAddr(), tc.metric, tc.labels...)
			if err != nil {
				return err
			}
			if v != tc.want {
				return fmt.Errorf("%s%v = %v, want %v", tc.metric, tc.labels, v, tc.want)
			}
			return nil
		})
	}
	// No series for a group that committed nothing of g2's partition 0.
	if v, err := floetest.Metric(n.HTTPAddr(), "floe_consumer_group_lag", `group="g2"`, `partition="0"`); err == nil {
		t.Errorf("g2 partition 0 reported: %v", v)
	}
}
