package table_test

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/floe-io/floe/objectstore"
	"github.com/floe-io/floe/table"
	"github.com/floe-io/floe/table/catalog"
)

// readMetrics returns every counter's sum and histogram's count, by name
// and attributes.
func readMetrics(t *testing.T, r *sdkmetric.ManualReader) map[string]int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(t.Context(), &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, dp := range d.DataPoints {
					got[metricName(m.Name, dp.Attributes)] += dp.Value
				}
			case metricdata.Histogram[float64]:
				for _, dp := range d.DataPoints {
					got[metricName(m.Name, dp.Attributes)] += int64(dp.Count)
				}
			}
		}
	}
	return got
}

func metricName(name string, attrs attribute.Set) string {
	for _, kv := range attrs.ToSlice() {
		name += " " + string(kv.Key) + "=" + kv.Value.Emit()
	}
	return name
}

// TestCommitMetrics: rows, bytes and commits by result, a lost race
// counted as a conflict.
func TestCommitMetrics(t *testing.T) {
	ctx := context.Background()
	reader := sdkmetric.NewManualReader()
	meter := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)).Meter("test")
	store := objectstore.NewMemory()
	mem := &catalog.MemCatalog{}
	winner, err := table.New(table.Options{Catalog: mem, Store: store, Root: "mem://floe"})
	if err != nil {
		t.Fatal(err)
	}
	rc := &racingCatalog{Catalog: mem, n: 1}
	rc.commit = func() error {
		_, err := winner.Commit(ctx, topic, table.Range{Partition: 1, From: 0, To: 5, Records: records(1, 0, 5, 1)})
		return err
	}
	tb, err := table.New(table.Options{Catalog: rc, Store: store, Root: "mem://floe", Meter: meter})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tb.Create(ctx, topic, table.Spec{}); err != nil {
		t.Fatal(err)
	}
	for _, r := range []table.Range{
		{Partition: 0, From: 0, To: 10, Records: records(0, 0, 10, 1)},   // loses once, then committed
		{Partition: 0, From: 0, To: 10, Records: records(0, 0, 10, 1)},   // skipped
		{Partition: 0, From: 11, To: 20, Records: records(0, 11, 20, 1)}, // a gap: error
	} {
		_, _ = tb.Commit(ctx, topic, r)
	}
	m := readMetrics(t, reader)
	const tbl = " table=floe.orders"
	for name, want := range map[string]int64{
		"floe.table.rows" + tbl:                             10,
		"floe.table.commits result=committed" + tbl:         1,
		"floe.table.commits result=conflict" + tbl:          1,
		"floe.table.commits result=skipped" + tbl:           1,
		"floe.table.commits result=error" + tbl:             1,
		"floe.table.commit.duration result=committed" + tbl: 1,
		"floe.table.commit.duration result=error" + tbl:     1,
	} {
		if m[name] != want {
			t.Errorf("%s = %d, want %d (all: %v)", name, m[name], want, m)
		}
	}
	if m["floe.table.bytes"+tbl] <= 0 {
		t.Errorf("no Parquet bytes counted: %v", m)
	}
}
