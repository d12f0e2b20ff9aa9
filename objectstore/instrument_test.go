package objectstore_test

import (
	"context"
	"errors"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/floe-io/floe/objectstore"
)

// TestInstrumentedCounts checks what Instrumented exports: requests by
// operation and outcome and bytes by operation, read from its atomics at
// collection, only for the series that moved; latency for every operation
// but stage.
func TestInstrumentedCounts(t *testing.T) {
	ctx := context.Background()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(ctx) })
	d, err := objectstore.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s := objectstore.Instrument(d, mp.Meter("test"))
	if err := s.Put(ctx, "a", []byte("12345")); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := s.Stage(ctx, "b", []byte("123")); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.GetRange(ctx, "missing", 0, 1); !errors.Is(err, objectstore.ErrNotFound) {
		t.Fatalf("GetRange(missing) = %v, want ErrNotFound", err)
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	sums := map[string]map[attribute.Distinct]int64{}
	hists := map[string]map[attribute.Distinct]uint64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch data := m.Data.(type) {
			case metricdata.Sum[int64]:
				if !data.IsMonotonic {
					t.Errorf("%s is not monotonic", m.Name)
				}
				sums[m.Name] = map[attribute.Distinct]int64{}
				for _, p := range data.DataPoints {
					sums[m.Name][p.Attributes.Equivalent()] = p.Value
				}
			case metricdata.Histogram[float64]:
				hists[m.Name] = map[attribute.Distinct]uint64{}
				for _, p := range data.DataPoints {
					hists[m.Name][p.Attributes.Equivalent()] = p.Count
				}
			}
		}
	}
	req := func(op, outcome string) attribute.Distinct {
		s := attribute.NewSet(attribute.String("op", op), attribute.String("outcome", outcome))
		return s.Equivalent()
	}
	op := func(op string) attribute.Distinct {
		s := attribute.NewSet(attribute.String("op", op))
		return s.Equivalent()
	}
	for name, want := range map[string]map[attribute.Distinct]int64{
		"floe.objectstore.requests": {req("put", "ok"): 1, req("stage", "ok"): 2, req("get", "error"): 1},
		"floe.objectstore.bytes":    {op("put"): 5, op("stage"): 6},
	} {
		got := sums[name]
		if len(got) != len(want) {
			t.Errorf("%s = %v, want %v (no series for what did not happen)", name, got, want)
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s%v = %d, want %d", name, k, got[k], v)
			}
		}
	}
	got := hists["floe.objectstore.request.duration"]
	if got[op("put")] != 1 || got[op("get")] != 1 || len(got) != 2 {
		t.Errorf("duration counts = %v, want one put and one get, and no stage", got)
	}
}
