package coordinator

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/coordinator/layout"
)

func TestBrokerRegistry(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.BrokerTTL = 6 * time.Second })
	ctx := context.Background()
	list := func() []coordapi.BrokerInfo {
		t.Helper()
		bs, err := e.c.ListBrokers(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return bs
	}
	b1 := coordapi.BrokerInfo{NodeID: 1, Host: "10.0.0.1", Port: 9092, Rack: "a", InternalAddr: "10.0.0.1:8080"}
	b2 := coordapi.BrokerInfo{NodeID: 2, Host: "10.0.0.2", Port: 9092}
	if got := list(); len(got) != 0 {
		t.Fatalf("empty registry lists %+v", got)
	}
	for _, b := range []coordapi.BrokerInfo{b2, b1} {
		if err := e.c.RegisterBroker(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	if got := list(); !reflect.DeepEqual(got, []coordapi.BrokerInfo{b1, b2}) {
		t.Fatalf("ListBrokers = %+v", got)
	}

	// Broker 2 keeps heartbeating, broker 1 stops: after the TTL only 2.
	e.clock.Advance(4 * time.Second)
	if err := e.c.RegisterBroker(ctx, b2); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(2 * time.Second)
	if got := list(); !reflect.DeepEqual(got, []coordapi.BrokerInfo{b2}) {
		t.Fatalf("after broker 1's TTL: %+v", got)
	}

	// A live node id at another address is refused; at the same address
	// (a restart) it is renewed, with its new rack and internal address.
	wantKerr(t, e.c.RegisterBroker(ctx, coordapi.BrokerInfo{NodeID: 2, Host: "10.0.0.9", Port: 9092}), kerr.DuplicateBrokerRegistration)
	b2.Rack, b2.InternalAddr = "b", "10.0.0.2:8080"
	if err := e.c.RegisterBroker(ctx, b2); err != nil {
		t.Fatal(err)
	}
	// An expired node id is free for anyone.
	moved := coordapi.BrokerInfo{NodeID: 1, Host: "10.0.0.7", Port: 9093}
	if err := e.c.RegisterBroker(ctx, moved); err != nil {
		t.Fatal(err)
	}
	if got := list(); !reflect.DeepEqual(got, []coordapi.BrokerInfo{moved, b2}) {
		t.Fatalf("ListBrokers = %+v", got)
	}

	// Deregistering takes effect at once, only for the same address.
	if err := e.c.DeregisterBroker(ctx, coordapi.BrokerInfo{NodeID: 1, Host: "10.0.0.1", Port: 9092}); err != nil {
		t.Fatal(err)
	}
	if got := list(); len(got) != 2 {
		t.Fatalf("deregistering another address removed a broker: %+v", got)
	}
	if err := e.c.DeregisterBroker(ctx, moved); err != nil {
		t.Fatal(err)
	}
	if got := list(); !reflect.DeepEqual(got, []coordapi.BrokerInfo{b2}) {
		t.Fatalf("after deregister: %+v", got)
	}

	for _, bad := range []coordapi.BrokerInfo{{NodeID: -1, Host: "h", Port: 1}, {NodeID: 1, Port: 1}, {NodeID: 1, Host: "h", Port: 70000}} {
		wantKerr(t, e.c.RegisterBroker(ctx, bad), kerr.InvalidRequest)
	}
	// The registry lives in memory: brokers register again after a restart.
	e.reopen()
	if got := list(); len(got) != 0 {
		t.Fatalf("after reopen: %+v", got)
	}
}

func TestRegisterMetrics(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	tp := e.topic("t", 2, nil)
	e.commit("wal/1", plain(tp.ID, 1, 4))
	if err := e.c.RegisterBroker(ctx, coordapi.BrokerInfo{NodeID: 1, Host: "h", Port: 1}); err != nil {
		t.Fatal(err)
	}
	reader := metric.NewManualReader()
	mp := metric.NewMeterProvider(metric.WithReader(reader))
	if _, err := e.c.RegisterMetrics(mp.Meter("test")); err != nil {
		t.Fatal(err)
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Gauge[int64]:
				for _, dp := range d.DataPoints {
					got[m.Name] += dp.Value
				}
			case metricdata.Sum[int64]:
				for _, dp := range d.DataPoints {
					got[m.Name] += dp.Value
				}
			default:
				t.Fatalf("metric %s is a %T", m.Name, m.Data)
			}
		}
	}
	want := map[string]int64{
		"floe.partition.high_watermark":   5,
		"floe.partition.log_start_offset": 0,
		"floe.coordinator.topics":         1,
		"floe.coordinator.objects":        1,
		"floe.coordinator.object_bytes":   batchLen,
		"floe.coordinator.brokers":        1,
		// One batch in the WAL tier, just committed (the clock stands).
		"floe.partition.wal_bytes":             batchLen,
		"floe.partition.segment_bytes":         0,
		"floe.partition.segments":              0,
		"floe.partition.wal_start_offset":      0,
		"floe.partition.consolidation_lag":     0,
		"floe.coordinator.tier_jobs":           0,
		"floe.coordinator.consolidated_bytes":  0,
		"floe.coordinator.retention_deletions": 0,
		"floe.coordinator.retention_bytes":     0,
		"floe.coordinator.compaction.passes":   0,
		"floe.coordinator.compaction.bytes":    0,
		"floe.coordinator.compaction.records":  0,
	}
	// One run row (its key and value) and one object record.
	if got["floe.partition.metadata_bytes"] <= layout.BatchKeyLen || got["floe.coordinator.metadata_bytes"] <= got["floe.partition.metadata_bytes"] {
		t.Errorf("metadata bytes %d, of the partition %d", got["floe.coordinator.metadata_bytes"], got["floe.partition.metadata_bytes"])
	}
	if got["floe.coordinator.pebble_bytes"] <= 0 {
		t.Errorf("pebble bytes %d", got["floe.coordinator.pebble_bytes"])
	}
	for _, name := range []string{"floe.coordinator.metadata_bytes", "floe.partition.metadata_bytes", "floe.coordinator.pebble_bytes"} {
		delete(got, name)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("metrics %v, want %v", got, want)
	}
}
