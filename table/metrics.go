package table

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/floe-io/floe/metrics"
)

// Commit outcomes, the "result" attribute of floe.table.commits.
const (
	resultCommitted = "committed" // a snapshot was made
	resultSkipped   = "skipped"   // the table already covered every range
	resultConflict  = "conflict"  // an attempt lost the swap (and was retried)
	resultError     = "error"     // Commit failed
)

// tableMetrics are the writer's instruments (docs/design/iceberg-tables.md,
// Metrics); the coordinator reports table lag.
type tableMetrics struct {
	rows     metric.Int64Counter
	bytes    metric.Int64Counter
	commits  metric.Int64Counter
	duration metric.Float64Histogram
}

func newTableMetrics(m metric.Meter) *tableMetrics {
	m = metrics.OrNoop(m)
	tm := &tableMetrics{}
	tm.rows, _ = m.Int64Counter("floe.table.rows", metric.WithUnit("{row}"),
		metric.WithDescription("Rows committed to Iceberg tables, by table."))
	tm.bytes, _ = m.Int64Counter("floe.table.bytes", metric.WithUnit("By"),
		metric.WithDescription("Parquet data file bytes committed to Iceberg tables, by table."))
	tm.commits, _ = m.Int64Counter("floe.table.commits", metric.WithUnit("{commit}"),
		metric.WithDescription("Table commit attempts, by table and result (committed, skipped, conflict: a lost swap, retried; error)."))
	tm.duration, _ = m.Float64Histogram("floe.table.commit.duration", metric.WithUnit("s"),
		metric.WithDescription("Time of a table commit, every attempt included, by table and result."))
	return tm
}

func (tm *tableMetrics) attempt(ctx context.Context, id Ident, result string) {
	tm.commits.Add(ctx, 1, metric.WithAttributes(attribute.String("table", id.String()), attribute.String("result", result)))
}

func (tm *tableMetrics) done(ctx context.Context, id Ident, result string, start time.Time, rows int, bytes int64) {
	tbl := attribute.String("table", id.String())
	tm.attempt(ctx, id, result)
	tm.duration.Record(ctx, time.Since(start).Seconds(), metric.WithAttributes(tbl, attribute.String("result", result)))
	if rows > 0 {
		tm.rows.Add(ctx, int64(rows), metric.WithAttributes(tbl))
	}
	if bytes > 0 {
		tm.bytes.Add(ctx, bytes, metric.WithAttributes(tbl))
	}
}
