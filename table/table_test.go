package table_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/floe-io/floe/internal/testkit/miniotest"
	"github.com/floe-io/floe/objectstore"
	"github.com/floe-io/floe/table"
	"github.com/floe-io/floe/table/catalog"
)

var topic = table.Ident{Namespace: []string{"floe"}, Name: "orders"}

// backend is one object store the tables are written to.
type backend struct {
	name  string
	open  func(t *testing.T) (objectstore.Store, string) // store and its root URI
	slow  bool
	local bool // files readable by path on this host
}

var backends = []backend{
	{name: "memory", open: func(t *testing.T) (objectstore.Store, string) {
		return objectstore.NewMemory(), "mem://floe"
	}},
	{name: "dir", local: true, open: func(t *testing.T) (objectstore.Store, string) {
		dir := t.TempDir()
		d, err := objectstore.NewDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		return d, "file://" + d.Root()
	}},
	{name: "minio", slow: true, open: func(t *testing.T) (objectstore.Store, string) {
		srv := miniotest.Start(t)
		return srv.Store(t), "s3://" + srv.Bucket
	}},
}

func newTables(t *testing.T, store objectstore.Store, root string, cat table.Catalog) *table.Tables {
	t.Helper()
	tb, err := table.New(table.Options{Catalog: cat, Store: store, Root: root})
	if err != nil {
		t.Fatal(err)
	}
	return tb
}

// records returns partition p's records at offsets [from, to) with a
// step, keyed, some with headers, null keys and values, and binary
// values that are not UTF-8.
func records(p int32, from, to, step int64) []table.Record {
	var out []table.Record
	for o := from; o < to; o += step {
		r := table.Record{
			Partition: p,
			Offset:    o,
			Timestamp: 1_765_000_000_000 + o*3_600_000, // an hour apart: several days
			Key:       fmt.Appendf(nil, "key-%d-%d", p, o%7),
			Value:     append([]byte{0xff, 0x00, byte(o)}, fmt.Sprintf(`{"n":%d}`, o)...),
		}
		switch o % 5 {
		case 1:
			r.Headers = []table.Header{{Key: "h", Value: []byte("v1")}, {Key: "h", Value: nil}}
		case 2:
			r.Key = nil
		case 3:
			r.Value = nil
		}
		out = append(out, r)
	}
	return out
}

// readAll scans the table with iceberg-go and returns its rows in
// (partition, offset) order.
func readAll(t *testing.T, tb *table.Tables) []table.Record {
	t.Helper()
	ctx := context.Background()
	tbl, err := tb.Load(ctx, topic)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	at, err := tbl.Scan().ToArrowTable(ctx)
	if err != nil {
		t.Fatalf("scan: %v", err)
	}
	defer at.Release()
	rdr := array.NewTableReader(at, 1024)
	defer rdr.Release()
	var out []table.Record
	for rdr.Next() {
		rec := rdr.RecordBatch()
		col := func(name string) arrow.Array {
			idx := rec.Schema().FieldIndices(name)
			if len(idx) != 1 {
				t.Fatalf("column %q: %v", name, rec.Schema())
			}
			return rec.Column(idx[0])
		}
		part := col("partition").(*array.Int32)
		off := col("offset").(*array.Int64)
		ts := col("timestamp").(*array.Timestamp)
		key := col("key").(*array.Binary)
		val := col("value").(*array.Binary)
		hdrs := col("headers").(*array.List)
		hs := hdrs.ListValues().(*array.Struct)
		hk := hs.Field(0).(*array.String)
		hv := hs.Field(1).(*array.Binary)
		for i := 0; i < int(rec.NumRows()); i++ {
			r := table.Record{Partition: part.Value(i), Offset: off.Value(i), Timestamp: int64(ts.Value(i)) / 1000}
			if !key.IsNull(i) {
				r.Key = bytes.Clone(key.Value(i))
			}
			if !val.IsNull(i) {
				r.Value = bytes.Clone(val.Value(i))
			}
			start, end := hdrs.ValueOffsets(i)
			for j := start; j < end; j++ {
				h := table.Header{Key: hk.Value(int(j))}
				if !hv.IsNull(int(j)) {
					h.Value = bytes.Clone(hv.Value(int(j)))
				}
				r.Headers = append(r.Headers, h)
			}
			out = append(out, r)
		}
	}
	if err := rdr.Err(); err != nil {
		t.Fatalf("read: %v", err)
	}
	slices.SortFunc(out, func(a, b table.Record) int {
		if a.Partition != b.Partition {
			return int(a.Partition - b.Partition)
		}
		return int(a.Offset - b.Offset)
	})
	return out
}

func equalRecords(t *testing.T, got, want []table.Record) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d rows, want %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Partition != w.Partition || g.Offset != w.Offset || g.Timestamp != w.Timestamp ||
			!bytes.Equal(g.Key, w.Key) || (g.Key == nil) != (w.Key == nil) ||
			!bytes.Equal(g.Value, w.Value) || (g.Value == nil) != (w.Value == nil) ||
			!slices.EqualFunc(g.Headers, w.Headers, func(a, b table.Header) bool {
				return a.Key == b.Key && bytes.Equal(a.Value, b.Value) && (a.Value == nil) == (b.Value == nil)
			}) {
			t.Fatalf("row %d:\n got %+v\nwant %+v", i, g, w)
		}
	}
}

// TestCommitReadBack writes ranges of two partitions to each backend
// and partitioning and reads every row back with iceberg-go's scan.
func TestCommitReadBack(t *testing.T) {
	for _, be := range backends {
		for _, part := range []string{"", "none", "identity(partition),hour(timestamp)"} {
			t.Run(be.name+"/"+strings.NewReplacer("(", "_", ")", "", ",", "+").Replace(cmp(part, "default")), func(t *testing.T) {
				if be.slow && part != "" {
					t.Skip("one partitioning is enough on MinIO")
				}
				ctx := context.Background()
				store, root := be.open(t)
				tb := newTables(t, store, root, &catalog.MemCatalog{})
				if created, err := tb.Create(ctx, topic, table.Spec{Partitioning: part}); err != nil || !created {
					t.Fatalf("create: %v %v", created, err)
				}
				var want []table.Record
				for _, r := range []table.Range{
					{Partition: 0, From: 0, To: 50, Records: records(0, 0, 50, 1)},
					{Partition: 1, From: 100, To: 140, Records: records(1, 100, 140, 2)},
					{Partition: 0, From: 50, To: 60, Records: records(0, 50, 60, 1)},
				} {
					res, err := tb.Commit(ctx, topic, r)
					if err != nil {
						t.Fatalf("commit %d [%d,%d): %v", r.Partition, r.From, r.To, err)
					}
					if res.Skipped || res.Rows != len(r.Records) {
						t.Fatalf("commit %d [%d,%d): %+v", r.Partition, r.From, r.To, res)
					}
					want = append(want, r.Records...)
				}
				slices.SortFunc(want, func(a, b table.Record) int {
					if a.Partition != b.Partition {
						return int(a.Partition - b.Partition)
					}
					return int(a.Offset - b.Offset)
				})
				equalRecords(t, readAll(t, tb), want)
				cov, err := tb.Covered(ctx, topic)
				if err != nil {
					t.Fatal(err)
				}
				if cov[0] != 60 || cov[1] != 140 || len(cov) != 2 {
					t.Fatalf("covered %v", cov)
				}
			})
		}
	}
}

func cmp(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// TestCommitExactlyOnce: a range the current snapshot covers is a no-op,
// an overlapping one adds only what is new, and one after a hole fails.
func TestCommitExactlyOnce(t *testing.T) {
	type step struct {
		r        table.Range
		skipped  bool
		rows     int
		wantErr  error
		covered0 int64
	}
	rng := func(p int32, from, to int64) table.Range {
		return table.Range{Partition: p, From: from, To: to, Records: records(p, from, to, 1)}
	}
	for _, tc := range []struct {
		name  string
		steps []step
		rows  int
	}{
		{name: "retry of the same range", rows: 10, steps: []step{
			{r: rng(0, 0, 10), rows: 10, covered0: 10},
			{r: rng(0, 0, 10), skipped: true, covered0: 10},
		}},
		{name: "range inside the covered one", rows: 10, steps: []step{
			{r: rng(0, 0, 10), rows: 10, covered0: 10},
			{r: rng(0, 3, 7), skipped: true, covered0: 10},
		}},
		{name: "overlap adds only the new records", rows: 15, steps: []step{
			{r: rng(0, 0, 10), rows: 10, covered0: 10},
			{r: rng(0, 5, 15), rows: 5, covered0: 15},
			{r: rng(0, 0, 15), skipped: true, covered0: 15},
		}},
		{name: "hole after the covered offset", rows: 10, steps: []step{
			{r: rng(0, 0, 10), rows: 10, covered0: 10},
			{r: rng(0, 11, 20), wantErr: table.ErrOffsetGap, covered0: 10},
		}},
		{name: "first range may start anywhere", rows: 10, steps: []step{
			{r: rng(0, 1000, 1010), rows: 10, covered0: 1010},
		}},
		{name: "empty range moves the covered offset", rows: 10, steps: []step{
			{r: table.Range{Partition: 0, From: 0, To: 5}, rows: 0, covered0: 5},
			{r: rng(0, 5, 15), rows: 10, covered0: 15},
		}},
		{name: "partitions are independent", rows: 20, steps: []step{
			{r: rng(0, 0, 10), rows: 10, covered0: 10},
			{r: rng(1, 0, 10), rows: 10, covered0: 10},
			{r: rng(1, 0, 10), skipped: true, covered0: 10},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			tb := newTables(t, objectstore.NewMemory(), "mem://floe", &catalog.MemCatalog{})
			if _, err := tb.Create(ctx, topic, table.Spec{}); err != nil {
				t.Fatal(err)
			}
			for i, s := range tc.steps {
				res, err := tb.Commit(ctx, topic, s.r)
				if s.wantErr != nil {
					if !errors.Is(err, s.wantErr) {
						t.Fatalf("step %d: err %v, want %v", i, err, s.wantErr)
					}
				} else if err != nil {
					t.Fatalf("step %d: %v", i, err)
				} else if res.Skipped != s.skipped || res.Rows != s.rows {
					t.Fatalf("step %d: %+v, want skipped %v rows %d", i, res, s.skipped, s.rows)
				}
				cov, err := tb.Covered(ctx, topic)
				if err != nil {
					t.Fatal(err)
				}
				if cov[0] != s.covered0 {
					t.Fatalf("step %d: partition 0 covered to %d, want %d", i, cov[0], s.covered0)
				}
			}
			got := readAll(t, tb)
			if len(got) != tc.rows {
				t.Fatalf("%d rows, want %d", len(got), tc.rows)
			}
			for i := 1; i < len(got); i++ {
				if got[i].Partition == got[i-1].Partition && got[i].Offset == got[i-1].Offset {
					t.Fatalf("partition %d offset %d twice", got[i].Partition, got[i].Offset)
				}
			}
		})
	}
}

// racingCatalog moves the pointer under the first n swaps it sees, as a
// concurrent committer would, by running commit first.
type racingCatalog struct {
	table.Catalog
	mu     sync.Mutex
	n      int
	commit func() error
}

func (c *racingCatalog) Swap(ctx context.Context, id table.Ident, prev, next string) error {
	c.mu.Lock()
	race := c.n > 0 && prev != ""
	if race {
		c.n--
	}
	c.mu.Unlock()
	if race {
		if err := c.commit(); err != nil {
			return fmt.Errorf("racing commit: %w", err)
		}
	}
	return c.Catalog.Swap(ctx, id, prev, next)
}

// TestCommitLosesRace: a commit whose pointer moved underneath it tries
// again on the new snapshot, keeps the other commit's coverage, skips
// what the winner already added, and leaves no file of the lost attempt.
func TestCommitLosesRace(t *testing.T) {
	for _, tc := range []struct {
		name      string
		winner    table.Range
		loser     table.Range
		loserRows int
		rows      int
		// reused: the loser's retry commits the data files its lost
		// attempt wrote (only the metadata is made again).
		reused bool
	}{
		{name: "other partition", winner: table.Range{Partition: 1, From: 0, To: 10, Records: records(1, 0, 10, 1)},
			loser: table.Range{Partition: 0, From: 0, To: 10, Records: records(0, 0, 10, 1)}, loserRows: 10, rows: 20, reused: true},
		{name: "same range (a duplicate job)", winner: table.Range{Partition: 0, From: 0, To: 10, Records: records(0, 0, 10, 1)},
			loser: table.Range{Partition: 0, From: 0, To: 10, Records: records(0, 0, 10, 1)}, loserRows: 0, rows: 10},
		{name: "overlapping range", winner: table.Range{Partition: 0, From: 0, To: 4, Records: records(0, 0, 4, 1)},
			loser: table.Range{Partition: 0, From: 0, To: 10, Records: records(0, 0, 10, 1)}, loserRows: 6, rows: 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			store := objectstore.NewMemory()
			mem := &catalog.MemCatalog{}
			winner := newTables(t, store, "mem://floe", mem)
			rc := &racingCatalog{Catalog: mem, n: 1}
			var lost []string // the loser's first attempt's data files
			rc.commit = func() error {
				objs, err := store.List(ctx, "tables/floe/orders/data/")
				if err != nil {
					return err
				}
				for _, o := range objs {
					lost = append(lost, o.Key)
				}
				_, err = winner.Commit(ctx, topic, tc.winner)
				return err
			}
			loser := newTables(t, store, "mem://floe", rc)
			if _, err := winner.Create(ctx, topic, table.Spec{}); err != nil {
				t.Fatal(err)
			}
			res, err := loser.Commit(ctx, topic, tc.loser)
			if err != nil {
				t.Fatal(err)
			}
			if res.Attempts != 2 || res.Rows != tc.loserRows {
				t.Fatalf("loser: %+v", res)
			}
			if got := readAll(t, winner); len(got) != tc.rows {
				t.Fatalf("%d rows, want %d", len(got), tc.rows)
			}
			cov, err := winner.Covered(ctx, topic)
			if err != nil {
				t.Fatal(err)
			}
			want := map[int32]int64{tc.winner.Partition: tc.winner.To}
			want[tc.loser.Partition] = max(want[tc.loser.Partition], tc.loser.To)
			if !maps.Equal(cov, want) {
				t.Fatalf("covered %v", cov)
			}
			// Every data file in the store is one the table references.
			tbl, err := winner.Load(ctx, topic)
			if err != nil {
				t.Fatal(err)
			}
			tasks, err := tbl.Scan().PlanFiles(ctx)
			if err != nil {
				t.Fatal(err)
			}
			referenced := map[string]bool{}
			for _, task := range tasks {
				referenced[strings.TrimPrefix(task.File.FilePath(), "mem://floe/")] = true
			}
			objs, err := store.List(ctx, "tables/floe/orders/data/")
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range objs {
				if !referenced[o.Key] {
					t.Errorf("data file %s is referenced by no snapshot", o.Key)
				}
			}
			if len(objs) != len(referenced) {
				t.Errorf("%d data files, %d referenced", len(objs), len(referenced))
			}
			if len(lost) == 0 {
				t.Fatal("the lost attempt wrote no data file")
			}
			for _, k := range lost {
				if referenced[k] != tc.reused {
					t.Errorf("lost attempt's data file %s referenced %v, want %v", k, referenced[k], tc.reused)
				}
			}
		})
	}
}

// TestCommitConcurrent: jobs for different partitions commit at the same
// time; every record lands exactly once.
func TestCommitConcurrent(t *testing.T) {
	ctx := context.Background()
	tb := newTables(t, objectstore.NewMemory(), "mem://floe", &catalog.MemCatalog{})
	if _, err := tb.Create(ctx, topic, table.Spec{}); err != nil {
		t.Fatal(err)
	}
	const parts, perPart, ranges = 4, 30, 3
	var wg sync.WaitGroup
	errs := make(chan error, parts)
	for p := range int32(parts) {
		wg.Go(func() {
			for i := range int64(ranges) {
				from, to := i*perPart/ranges, (i+1)*perPart/ranges
				if _, err := tb.Commit(ctx, topic, table.Range{Partition: p, From: from, To: to, Records: records(p, from, to, 1)}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	got := readAll(t, tb)
	var want []table.Record
	for p := range int32(parts) {
		want = append(want, records(p, 0, perPart, 1)...)
	}
	equalRecords(t, got, want)
}

// TestCommitRanges: a job's ranges of several partitions go in one
// snapshot, each skipped, trimmed or added on its own; a gap in one
// fails the whole commit and adds nothing.
func TestCommitRanges(t *testing.T) {
	rng := func(p int32, from, to int64) table.Range {
		return table.Range{Partition: p, From: from, To: to, Records: records(p, from, to, 1)}
	}
	for _, tc := range []struct {
		name    string
		ranges  []table.Range
		want    []table.RangeResult
		skipped bool
		wantErr error
		rows    int // in the table afterwards
	}{
		{name: "new, covered and overlapping", rows: 30 + 10 + 10 + 20,
			ranges: []table.Range{rng(0, 10, 20), rng(1, 0, 10), rng(2, 5, 20), rng(3, 0, 20)},
			want:   []table.RangeResult{{Partition: 0, Rows: 10}, {Partition: 1, Skipped: true}, {Partition: 2, Rows: 10}, {Partition: 3, Rows: 20}}},
		{name: "all covered", rows: 30, skipped: true,
			ranges: []table.Range{rng(0, 0, 10), rng(1, 0, 10)},
			want:   []table.RangeResult{{Partition: 0, Skipped: true}, {Partition: 1, Skipped: true}}},
		{name: "a gap fails all", rows: 30, wantErr: table.ErrOffsetGap,
			ranges: []table.Range{rng(3, 0, 10), rng(0, 11, 20)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			tb := newTables(t, objectstore.NewMemory(), "mem://floe", &catalog.MemCatalog{})
			if _, err := tb.Create(ctx, topic, table.Spec{}); err != nil {
				t.Fatal(err)
			}
			// Partitions 0, 1 and 2 are covered to 10.
			if _, err := tb.Commit(ctx, topic, rng(0, 0, 10), rng(1, 0, 10), rng(2, 0, 10)); err != nil {
				t.Fatal(err)
			}
			before, err := tb.Load(ctx, topic)
			if err != nil {
				t.Fatal(err)
			}
			res, err := tb.Commit(ctx, topic, tc.ranges...)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err %v, want %v", err, tc.wantErr)
				}
			} else if err != nil {
				t.Fatal(err)
			} else if res.Skipped != tc.skipped || !slices.Equal(res.Ranges, tc.want) {
				t.Fatalf("%+v, want skipped %v %+v", res, tc.skipped, tc.want)
			}
			after, err := tb.Load(ctx, topic)
			if err != nil {
				t.Fatal(err)
			}
			if made := after.CurrentSnapshot().SnapshotID != before.CurrentSnapshot().SnapshotID; made != (tc.wantErr == nil && !tc.skipped) {
				t.Fatalf("new snapshot: %v", made)
			}
			if got := readAll(t, tb); len(got) != tc.rows {
				t.Fatalf("%d rows, want %d", len(got), tc.rows)
			}
		})
	}
}

// lostCatalog fails every swap as a coordinator that died mid-call does:
// not a conflict, outcome unknown, and (here) nothing changed.
type lostCatalog struct{ table.Catalog }

func (lostCatalog) Swap(context.Context, table.Ident, string, string) error {
	return errors.New("coordinator: connection lost")
}

// TestCollectOrphans: a commit that dies before its swap leaves its files
// unreferenced and the rows invisible; orphan collection deletes those
// files once older than the grace period, and only those.
func TestCollectOrphans(t *testing.T) {
	for _, tc := range []struct {
		name      string
		olderThan time.Duration
		collected bool
	}{
		{name: "past the grace period", olderThan: 0, collected: true},
		{name: "within the grace period", olderThan: time.Hour, collected: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			store := objectstore.NewMemory()
			mem := &catalog.MemCatalog{}
			tb := newTables(t, store, "mem://floe", mem)
			if _, err := tb.Create(ctx, topic, table.Spec{}); err != nil {
				t.Fatal(err)
			}
			if _, err := tb.Commit(ctx, topic, table.Range{Partition: 0, From: 0, To: 10, Records: records(0, 0, 10, 1)}); err != nil {
				t.Fatal(err)
			}
			before, err := store.List(ctx, "tables/")
			if err != nil {
				t.Fatal(err)
			}
			dying := newTables(t, store, "mem://floe", lostCatalog{mem})
			if _, err := dying.Commit(ctx, topic, table.Range{Partition: 0, From: 10, To: 20, Records: records(0, 10, 20, 1)}); err == nil {
				t.Fatal("commit through a lost coordinator succeeded")
			}
			left, err := store.List(ctx, "tables/")
			if err != nil {
				t.Fatal(err)
			}
			if len(left) <= len(before) {
				t.Fatalf("the dead commit left no files (%d before, %d after)", len(before), len(left))
			}
			if got := readAll(t, tb); len(got) != 10 {
				t.Fatalf("%d rows visible, want 10", len(got))
			}
			deleted, err := tb.CollectOrphans(ctx, topic, tc.olderThan)
			if err != nil {
				t.Fatal(err)
			}
			after, err := store.List(ctx, "tables/")
			if err != nil {
				t.Fatal(err)
			}
			want := left
			if tc.collected {
				want = before
			}
			if !slices.Equal(after, want) {
				t.Fatalf("after collection (deleted %v):\n got %v\nwant %v", deleted, after, want)
			}
			if len(deleted) != len(left)-len(after) {
				t.Fatalf("reported %d deleted, %d went", len(deleted), len(left)-len(after))
			}
			equalRecords(t, readAll(t, tb), records(0, 0, 10, 1))
			// The range is committed after all, once: nothing covered it.
			if res, err := tb.Commit(ctx, topic, table.Range{Partition: 0, From: 10, To: 20, Records: records(0, 10, 20, 1)}); err != nil || res.Rows != 10 {
				t.Fatalf("retry: %+v, %v", res, err)
			}
		})
	}
}

// TestCommitManyBatches: a range larger than one Arrow batch (8192 rows)
// is written batch by batch and reads back whole, in one snapshot.
func TestCommitManyBatches(t *testing.T) {
	ctx := context.Background()
	tb := newTables(t, objectstore.NewMemory(), "mem://floe", &catalog.MemCatalog{})
	if _, err := tb.Create(ctx, topic, table.Spec{Partitioning: "none"}); err != nil {
		t.Fatal(err)
	}
	recs := records(0, 0, 20_000, 1)
	res, err := tb.Commit(ctx, topic, table.Range{From: 0, To: 20_000, Records: recs})
	if err != nil || res.Rows != 20_000 {
		t.Fatalf("%+v, %v", res, err)
	}
	equalRecords(t, readAll(t, tb), recs)
}

// TestExpireSnapshots: expiring all but the newest snapshot keeps every
// row and the covered offsets, so a retried range is still skipped.
func TestExpireSnapshots(t *testing.T) {
	for _, tc := range []struct {
		name       string
		olderThan  time.Duration
		retainLast int
		expired    int
	}{
		{name: "all but the last", olderThan: 0, retainLast: 1, expired: 4},
		{name: "all but the last two", olderThan: 0, retainLast: 2, expired: 3},
		{name: "none old enough", olderThan: time.Hour, retainLast: 1, expired: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			store := objectstore.NewMemory()
			tb := newTables(t, store, "mem://floe", &catalog.MemCatalog{})
			if _, err := tb.Create(ctx, topic, table.Spec{}); err != nil {
				t.Fatal(err)
			}
			var want []table.Record
			for i := range int64(5) {
				r := table.Range{Partition: int32(i % 2), From: i / 2 * 10, To: i/2*10 + 10, Records: records(int32(i%2), i/2*10, i/2*10+10, 1)}
				if _, err := tb.Commit(ctx, topic, r); err != nil {
					t.Fatal(err)
				}
				want = append(want, r.Records...)
			}
			slices.SortFunc(want, func(a, b table.Record) int {
				if a.Partition != b.Partition {
					return int(a.Partition - b.Partition)
				}
				return int(a.Offset - b.Offset)
			})
			n, err := tb.ExpireSnapshots(ctx, topic, tc.olderThan, tc.retainLast)
			if err != nil {
				t.Fatal(err)
			}
			if n != tc.expired {
				t.Fatalf("expired %d, want %d", n, tc.expired)
			}
			equalRecords(t, readAll(t, tb), want)
			// What expiry left unreferenced is an orphan now; collecting
			// orphans must not touch what the kept snapshots need.
			if _, err := tb.CollectOrphans(ctx, topic, 0); err != nil {
				t.Fatal(err)
			}
			equalRecords(t, readAll(t, tb), want)
			cov, err := tb.Covered(ctx, topic)
			if err != nil || cov[0] != 30 || cov[1] != 20 {
				t.Fatalf("covered %v, %v", cov, err)
			}
			if res, err := tb.Commit(ctx, topic, table.Range{Partition: 0, From: 20, To: 30, Records: records(0, 20, 30, 1)}); err != nil || !res.Skipped {
				t.Fatalf("retry after expiry: %+v, %v", res, err)
			}
		})
	}
}

// TestTopicRecreated: a topic deleted and created again under its name
// gets a table at a location of its own (its topic id in it), with no
// covered offsets of the old topic, and collecting its orphans leaves the
// old table's files alone.
func TestTopicRecreated(t *testing.T) {
	ctx := context.Background()
	store := objectstore.NewMemory()
	mem := &catalog.MemCatalog{}
	tb := newTables(t, store, "mem://floe", mem)
	if _, err := tb.Create(ctx, topic, table.Spec{TopicID: "0a0a"}); err != nil {
		t.Fatal(err)
	}
	if _, err := tb.Commit(ctx, topic, table.Range{From: 0, To: 10, Records: records(0, 0, 10, 1)}); err != nil {
		t.Fatal(err)
	}
	old, err := tb.Load(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	if old.Location() != "mem://floe/tables/floe/orders-0a0a" || old.Properties()[table.PropTopicID] != "0a0a" {
		t.Fatalf("location %s, properties %v", old.Location(), old.Properties())
	}
	// The old table is moved aside (renamed), and the name taken again.
	aside := table.Ident{Namespace: topic.Namespace, Name: "orders__0a0a"}
	if err := mem.Swap(ctx, aside, "", old.MetadataLocation()); err != nil {
		t.Fatal(err)
	}
	if err := mem.Swap(ctx, topic, old.MetadataLocation(), ""); err != nil {
		t.Fatal(err)
	}
	if _, err := tb.Create(ctx, topic, table.Spec{TopicID: "0b0b"}); err != nil {
		t.Fatal(err)
	}
	if cov, err := tb.Covered(ctx, topic); err != nil || len(cov) != 0 {
		t.Fatalf("new table covers %v (%v)", cov, err)
	}
	if res, err := tb.Commit(ctx, topic, table.Range{From: 0, To: 5, Records: records(0, 0, 5, 1)}); err != nil || res.Rows != 5 {
		t.Fatalf("new topic's first records: %+v, %v", res, err)
	}
	if deleted, err := tb.CollectOrphans(ctx, topic, 0); err != nil || len(deleted) != 0 {
		t.Fatalf("collected %v, %v", deleted, err)
	}
	oldFiles, err := store.List(ctx, "tables/floe/orders-0a0a/")
	if err != nil || len(oldFiles) == 0 {
		t.Fatalf("old table's files: %d, %v", len(oldFiles), err)
	}
	if got := readAll(t, tb); len(got) != 5 {
		t.Fatalf("new table has %d rows", len(got))
	}
}
