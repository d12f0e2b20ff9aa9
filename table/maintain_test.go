package table_test

import (
	"context"
	"slices"
	"testing"
	"time"

	itable "github.com/apache/iceberg-go/table"

	"github.com/floe-io/floe/table"
	"github.com/floe-io/floe/table/catalog"
)

// hour is records()' timestamp step, and base its first timestamp.
const (
	hourMs = int64(3_600_000)
	baseMs = int64(1_765_000_000_000)
)

// TestApplyRetention: table.retention.ms removes whole data files whose
// newest row is older than the cutoff, in a delete snapshot that writes no
// data file and keeps the covered offsets, so a retried range stays
// skipped and the next one commits; a file with rows on both sides of the
// cutoff stays whole. On every backend (MinIO for the default
// partitioning), with the clock the caller passes.
func TestApplyRetention(t *testing.T) {
	// A commit of partition 0's [from, to) with timestamps ts(o).
	type commit struct {
		from, to int64
		ts       func(o int64) int64
	}
	hourly := func(o int64) int64 { return baseMs + o*hourMs }
	// The day of baseMs begins at dayMs (UTC).
	dayMs := baseMs - baseMs%(24*hourMs)
	for _, tc := range []struct {
		name         string
		partitioning string
		commits      []commit
		cutoffMs     int64
		kept         func(o int64) bool // the offsets that remain
		files        int64
	}{
		{
			// 72 hourly records over four UTC days, in one commit: the
			// days before the cutoff's go, the cutoff's day stays.
			name: "day partitions", partitioning: "", commits: []commit{{0, 72, hourly}},
			cutoffMs: dayMs + 2*24*hourMs + 5*hourMs,
			kept:     func(o int64) bool { return hourly(o) >= dayMs+2*24*hourMs },
			files:    2,
		},
		{
			name: "unpartitioned, whole files", partitioning: "none", commits: []commit{{0, 10, hourly}, {10, 20, hourly}, {20, 30, hourly}},
			cutoffMs: hourly(25),
			kept:     func(o int64) bool { return o >= 20 },
			files:    2,
		},
		{
			// The second file has rows on both sides of the cutoff, and
			// older than the first's newest: both are kept whole.
			name: "unpartitioned, out of order", partitioning: "none",
			commits: []commit{
				{0, 10, hourly},
				{10, 20, func(o int64) int64 { return baseMs + 5*hourMs + (o-10)*2*hourMs }}, // hours 5 to 23
				{20, 30, hourly},
			},
			cutoffMs: hourly(15),
			kept:     func(int64) bool { return true },
		},
		{
			name: "nothing old enough", partitioning: "", commits: []commit{{0, 48, hourly}},
			cutoffMs: baseMs,
			kept:     func(int64) bool { return true },
		},
	} {
		for _, be := range backends {
			t.Run(be.name+"/"+tc.name, func(t *testing.T) {
				if be.slow && tc.partitioning != "" {
					t.Skip("the default partitioning is enough on MinIO")
				}
				ctx := context.Background()
				store, root := be.open(t)
				tb := newTables(t, store, root, &catalog.MemCatalog{})
				if _, err := tb.Create(ctx, topic, table.Spec{Partitioning: tc.partitioning}); err != nil {
					t.Fatal(err)
				}
				var want []table.Record
				var last int64
				for _, c := range tc.commits {
					recs := records(0, c.from, c.to, 1)
					for i := range recs {
						recs[i].Timestamp = c.ts(recs[i].Offset)
						if tc.kept(recs[i].Offset) {
							want = append(want, recs[i])
						}
					}
					if _, err := tb.Commit(ctx, topic, table.Range{Partition: 0, From: c.from, To: c.to, Records: recs}); err != nil {
						t.Fatal(err)
					}
					last = c.to
				}
				before, err := tb.Load(ctx, topic)
				if err != nil {
					t.Fatal(err)
				}
				res, err := tb.ApplyRetention(ctx, topic, time.UnixMilli(tc.cutoffMs))
				if err != nil {
					t.Fatal(err)
				}
				if res.Files != tc.files || res.Rows != int64(len(records(0, 0, last, 1))-len(want)) {
					t.Fatalf("removed %d files, %d rows; want %d files, %d rows", res.Files, res.Rows, tc.files, len(records(0, 0, last, 1))-len(want))
				}
				tbl, err := tb.Load(ctx, topic)
				if err != nil {
					t.Fatal(err)
				}
				snap := tbl.CurrentSnapshot()
				if tc.files == 0 {
					if res.SnapshotID != 0 || snap.SnapshotID != before.CurrentSnapshot().SnapshotID {
						t.Fatalf("a retention that removes nothing committed snapshot %d", res.SnapshotID)
					}
				} else {
					if snap.SnapshotID != res.SnapshotID || snap.Summary.Operation != itable.OpDelete {
						t.Fatalf("current snapshot %d (%s), want the delete %d", snap.SnapshotID, snap.Summary.Operation, res.SnapshotID)
					}
					if n := snap.Summary.Properties["added-data-files"]; n != "" && n != "0" {
						t.Fatalf("the delete rewrote data: added-data-files %s", n)
					}
				}
				equalRecords(t, readAll(t, tb), want)
				if cov, err := tb.Covered(ctx, topic); err != nil || cov[0] != last {
					t.Fatalf("covered %v, %v; want partition 0 at %d", cov, err, last)
				}
				// A retried range stays covered; the next one commits.
				if r, err := tb.Commit(ctx, topic, table.Range{Partition: 0, From: 0, To: last, Records: records(0, 0, last, 1)}); err != nil || !r.Skipped {
					t.Fatalf("retry after retention: %+v, %v", r, err)
				}
				next := records(0, last, last+5, 1)
				if _, err := tb.Commit(ctx, topic, table.Range{Partition: 0, From: last, To: last + 5, Records: next}); err != nil {
					t.Fatal(err)
				}
				equalRecords(t, readAll(t, tb), slices.Concat(want, next))
			})
		}
	}
}
