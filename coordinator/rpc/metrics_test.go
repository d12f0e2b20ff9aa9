package rpc_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/coordinator"
	"github.com/floe-io/floe/coordinator/rpc"
	"github.com/floe-io/floe/internal/testkit"
	"github.com/floe-io/floe/internal/testkit/natstest"
)

// TestDurationByOpAndOutcome checks the server's request durations: one
// series an op and outcome, counting each request once, with a Kafka
// error's requests apart from those that succeeded.
func TestDurationByOpAndOutcome(t *testing.T) {
	ctx := context.Background()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(ctx) })
	ns := natstest.Start(t)
	c, err := coordinator.Open(coordinator.Options{Dir: t.TempDir(), Logger: testkit.Logger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	srv, err := rpc.ServeWith(ctx, natstest.Connect(t, ns), "test", c, rpc.ServerOptions{Logger: testkit.Logger(), Meter: mp.Meter("test")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	client := rpc.NewClient(natstest.Connect(t, ns), "test", rpc.ClientOptions{Timeout: 2 * time.Second, Logger: testkit.Logger()})

	tp, err := client.CreateTopic(ctx, coordapi.CreateTopicRequest{Name: "orders", Partitions: 1, ReplicationFactor: -1})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := client.FindBatches(ctx, coordapi.FindBatchesRequest{TopicID: tp.ID, Partition: 0, Offset: 0, MaxBytes: 1}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := client.FindBatches(ctx, coordapi.FindBatchesRequest{TopicID: tp.ID, Partition: 0, Offset: 5, MaxBytes: 1}); !errors.Is(err, kerr.OffsetOutOfRange) {
		t.Fatalf("FindBatches past the end = %v, want OFFSET_OUT_OF_RANGE", err)
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	got := map[[2]string]uint64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != "floe.coordinator.rpc.duration" {
				continue
			}
			for _, p := range m.Data.(metricdata.Histogram[float64]).DataPoints {
				op, _ := p.Attributes.Value(attribute.Key("op"))
				outcome, _ := p.Attributes.Value(attribute.Key("outcome"))
				if p.Attributes.Len() != 2 {
					t.Errorf("a series with attributes %v, want op and outcome", p.Attributes.ToSlice())
				}
				got[[2]string{op.AsString(), outcome.AsString()}] = p.Count
			}
		}
	}
	for _, want := range []struct {
		op, outcome string
		n           uint64
	}{
		{"create_topic", "ok", 1},
		{"find_batches", "ok", 3},
		{"find_batches", "kafka_error", 1},
	} {
		if n := got[[2]string{want.op, want.outcome}]; n != want.n {
			t.Errorf("%s %s: %d requests, want %d (all series: %v)", want.op, want.outcome, n, want.n, got)
		}
	}
}
