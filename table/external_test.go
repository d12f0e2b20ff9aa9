package table_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	itable "github.com/apache/iceberg-go/table"

	"github.com/floe-io/floe/internal/testkit/icebergresttest"
	"github.com/floe-io/floe/objectstore"
	"github.com/floe-io/floe/table"
	"github.com/floe-io/floe/table/catalog"
)

// interposed commits another writer's snapshot just before the first
// commit it passes on: floe's commit then meets the real catalog's 409
// (its assert-ref-snapshot-id no longer holds) and must retry.
type interposed struct {
	table.ExternalCatalog
	other func(ctx context.Context) error
	fired atomic.Bool
	err   error
}

func (c *interposed) CommitTable(ctx context.Context, ident itable.Identifier, reqs []itable.Requirement, updates []itable.Update) (itable.Metadata, string, error) {
	if c.other != nil && c.fired.CompareAndSwap(false, true) {
		c.err = c.other(ctx)
	}
	return c.ExternalCatalog.CommitTable(ctx, ident, reqs, updates)
}

// TestExternalRESTCatalog commits tables to Apache Iceberg's reference
// REST catalog server (a JdbcCatalog behind Iceberg's own servlet, with a
// bearer token, and an OAuth2 client credential for a second writer): create, commits and their exactly-once skips, a commit
// that loses the race to another writer and retries without doubling a
// row, retention, snapshot expiry and orphan collection, all through the
// catalog; iceberg-go and PyIceberg read the table back through it.
func TestExternalRESTCatalog(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	store, err := objectstore.NewDir(filepath.Join(dir, "store"))
	if err != nil {
		t.Fatal(err)
	}
	root := "file://" + store.Root()
	// The reference server's token for OAuth2 client "floe-writer":
	// clients given it as a bearer token, or given floe-writer's
	// credential (exchanged at /v1/oauth/tokens), are let in.
	const token = "client-credentials-token:sub=floe-writer"
	srv := icebergresttest.Start(t, icebergresttest.Options{Warehouse: "file://" + filepath.Join(dir, "warehouse"), Token: token})

	if _, err := table.NewRESTCatalog(table.RESTCatalogOptions{URL: srv.URL, Token: "a", Credential: "b:c"}); err == nil {
		t.Fatal("a token and a credential both: no error")
	}
	// A wrong token, and another client's credential (its exchanged
	// token is not the one the server takes), are refused.
	for _, o := range []table.RESTCatalogOptions{{URL: srv.URL, Token: "wrong"}, {URL: srv.URL, Credential: "intruder:secret"}} {
		bad, err := table.NewRESTCatalog(o)
		if err != nil {
			t.Fatal(err)
		}
		badTables, err := table.New(table.Options{External: bad, Store: store, Root: root})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := badTables.Create(ctx, topic, table.Spec{}); err == nil {
			t.Fatalf("%+v: created", o)
		}
	}

	ext, err := table.NewRESTCatalog(table.RESTCatalogOptions{URL: srv.URL, Token: token})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ext.Close() })
	race := &interposed{ExternalCatalog: ext}
	tb, err := table.New(table.Options{External: race, Store: store, Root: root})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tb.Load(ctx, topic); !errors.Is(err, catalog.ErrNoSuchTable) {
		t.Fatalf("load before create: %v, want ErrNoSuchTable", err)
	}
	for i, want := range []bool{true, false} {
		created, err := tb.Create(ctx, topic, table.Spec{TopicID: "0123abcd"})
		if err != nil || created != want {
			t.Fatalf("create %d: %v, %v; want %v", i, created, err, want)
		}
	}
	tbl, err := tb.Load(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := tbl.Location(), tb.Location(topic, "0123abcd"); got != want {
		t.Fatalf("location %q, want floe's %q", got, want)
	}
	if tbl.Properties()[table.PropTopicID] != "0123abcd" {
		t.Fatalf("properties %v", tbl.Properties())
	}

	// Two commits, the second one repeated (a retried job): skipped.
	if _, err := tb.Commit(ctx, topic, table.Range{Partition: 0, From: 0, To: 40, Records: records(0, 0, 40, 1)}); err != nil {
		t.Fatal(err)
	}
	for i, skipped := range []bool{false, true} {
		res, err := tb.Commit(ctx, topic, table.Range{Partition: 2, From: 7, To: 31, Records: records(2, 7, 30, 3)})
		if err != nil || res.Skipped != skipped {
			t.Fatalf("commit %d: %+v, %v; want skipped %v", i, res, err, skipped)
		}
	}

	// Another writer (a second Tables on the same catalog, as a job of
	// another shard, with an OAuth2 client credential) commits partition 1 between floe's load and its
	// commit; then floe's commit of partitions 0 (partly covered) and 1
	// (wholly covered by the other's) retries.
	oauth, err := table.NewRESTCatalog(table.RESTCatalogOptions{URL: srv.URL, Credential: "floe-writer:secret"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = oauth.Close() })
	other, err := table.New(table.Options{External: oauth, Store: store, Root: root})
	if err != nil {
		t.Fatal(err)
	}
	race.other = func(ctx context.Context) error {
		_, err := other.Commit(ctx, topic, table.Range{Partition: 1, From: 0, To: 20, Records: records(1, 0, 20, 1)})
		return err
	}
	res, err := tb.Commit(ctx, topic,
		table.Range{Partition: 0, From: 30, To: 60, Records: records(0, 30, 60, 1)},
		table.Range{Partition: 1, From: 0, To: 20, Records: records(1, 0, 20, 1)})
	if err != nil || race.err != nil {
		t.Fatalf("commit against another writer: %v; the other's: %v", err, race.err)
	}
	if res.Attempts != 2 || res.Rows != 20 || !res.Ranges[1].Skipped {
		t.Fatalf("commit against another writer: %+v, want 2 attempts, 20 rows, partition 1 skipped", res)
	}
	covered, err := tb.Covered(ctx, topic)
	if err != nil || covered[0] != 60 || covered[1] != 20 || covered[2] != 31 {
		t.Fatalf("covered %v, %v", covered, err)
	}
	want := append(append(records(0, 0, 60, 1), records(1, 0, 20, 1)...), records(2, 7, 30, 3)...)
	equalRecords(t, readAll(t, tb), want)

	// PyIceberg through the same catalog, with the token.
	py := readers[0].python(t)
	out := runReader(t, py, []string{"testdata/pyiceberg_read.py", "--rest", srv.URL, topic.String()},
		map[string]string{"token": token})
	equalRecords(t, out.rows, want)
	if out.summary[table.SummaryNextOffsetPrefix+"0"] != "60" {
		t.Fatalf("summary as PyIceberg sees it: %v", out.summary)
	}

	// Retention: partition 0's records are an hour apart from the same
	// base as the others'; a cutoff two days in takes whole days.
	cutoff := time.UnixMilli(want[0].Timestamp).Add(48 * time.Hour)
	rres, err := tb.ApplyRetention(ctx, topic, cutoff)
	if err != nil || rres.Files == 0 {
		t.Fatalf("retention: %+v, %v", rres, err)
	}
	var kept []table.Record
	for _, r := range want {
		if r.Timestamp >= rres.Cutoff.UnixMilli() {
			kept = append(kept, r)
		}
	}
	if int64(len(want)-len(kept)) != rres.Rows {
		t.Fatalf("retention removed %d rows, want %d", rres.Rows, len(want)-len(kept))
	}
	equalRecords(t, readAll(t, tb), kept)
	if covered, err := tb.Covered(ctx, topic); err != nil || covered[0] != 60 {
		t.Fatalf("covered after retention %v, %v", covered, err)
	}

	// Expiry keeps the newest snapshot only, through the catalog.
	before, err := tb.Load(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	n, err := tb.ExpireSnapshots(ctx, topic, 0, 1)
	if err != nil || n != len(before.Metadata().Snapshots())-1 || n < 4 {
		t.Fatalf("expired %d of %d snapshots: %v", n, len(before.Metadata().Snapshots()), err)
	}
	after, err := tb.Load(ctx, topic)
	if err != nil || len(after.Metadata().Snapshots()) != 1 {
		t.Fatalf("after expiry: %v", err)
	}
	equalRecords(t, readAll(t, tb), kept)

	// An orphan (a job that died before its commit) goes; what the
	// table references stays.
	orphan := tb.Location(topic, "0123abcd") + "/data/orphan.parquet"
	fio := table.NewFileIO(ctx, store, root)
	if err := fio.WriteFile(orphan, []byte("PAR1")); err != nil {
		t.Fatal(err)
	}
	deleted, err := tb.CollectOrphans(ctx, topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(deleted, orphan) {
		t.Fatalf("orphans deleted %v, want %s among them", deleted, orphan)
	}
	equalRecords(t, readAll(t, tb), kept)
	out = runReader(t, py, []string{"testdata/pyiceberg_read.py", "--rest", srv.URL, topic.String()},
		map[string]string{"token": token})
	equalRecords(t, out.rows, kept)

	// A table of a recreated topic is moved aside by the catalog's
	// rename.
	aside := table.Ident{Namespace: topic.Namespace, Name: topic.Name + "__0123abcd"}
	if err := tb.Rename(ctx, topic, aside); err != nil {
		t.Fatal(err)
	}
	if _, err := tb.Load(ctx, topic); !errors.Is(err, catalog.ErrNoSuchTable) {
		t.Fatalf("load after rename: %v", err)
	}
	if tbl, err := tb.Load(ctx, aside); err != nil || tbl.Properties()[table.PropTopicID] != "0123abcd" {
		t.Fatalf("load renamed: %v", err)
	}

	// A cluster switched from floe's catalog: a table floe's catalog
	// holds is registered in the external one, rows, history and
	// covered offsets and all, and goes on from there; one of another
	// topic id (the topic was recreated) is not, and a new table is made.
	mem := &catalog.MemCatalog{}
	own := newTables(t, store, root, mem)
	imported := table.Ident{Namespace: []string{"floe"}, Name: "imported"}
	recreated := table.Ident{Namespace: []string{"floe"}, Name: "recreated"}
	for _, id := range []table.Ident{imported, recreated} {
		if _, err := own.Create(ctx, id, table.Spec{TopicID: "aaaa"}); err != nil {
			t.Fatal(err)
		}
		for _, r := range []table.Range{{Partition: 0, From: 0, To: 10, Records: records(0, 0, 10, 1)}, {Partition: 0, From: 10, To: 20, Records: records(0, 10, 20, 1)}} {
			if _, err := own.Commit(ctx, id, r); err != nil {
				t.Fatal(err)
			}
		}
	}
	switched, err := table.New(table.Options{External: ext, Catalog: mem, Store: store, Root: root})
	if err != nil {
		t.Fatal(err)
	}
	if created, err := switched.Create(ctx, imported, table.Spec{TopicID: "aaaa"}); err != nil || !created {
		t.Fatalf("register: %v, %v", created, err)
	}
	if created, err := switched.Create(ctx, recreated, table.Spec{TopicID: "bbbb"}); err != nil || !created {
		t.Fatalf("create over a table of another topic id: %v, %v", created, err)
	}
	if covered, err := switched.Covered(ctx, recreated); err != nil || len(covered) != 0 {
		t.Fatalf("the recreated topic's table covers %v, %v: the old topic's was registered", covered, err)
	}
	if covered, err := switched.Covered(ctx, imported); err != nil || covered[0] != 20 {
		t.Fatalf("the registered table covers %v, %v", covered, err)
	}
	res, err = switched.Commit(ctx, imported, table.Range{Partition: 0, From: 15, To: 30, Records: records(0, 15, 30, 1)})
	if err != nil || res.Rows != 10 {
		t.Fatalf("commit after the switch: %+v, %v", res, err)
	}
	tbl, err = switched.Load(ctx, imported)
	if err != nil || len(tbl.Metadata().Snapshots()) != 3 {
		t.Fatalf("registered table's history: %v", err)
	}
	out = runReader(t, py, []string{"testdata/pyiceberg_read.py", "--rest", srv.URL, imported.String()},
		map[string]string{"token": token})
	equalRecords(t, out.rows, records(0, 0, 30, 1))

	// A compacted topic's table (latest value per key, a copy-on-write
	// overwrite a commit) through the catalog.
	compacted := table.Ident{Namespace: []string{"floe"}, Name: "compacted"}
	if _, err := tb.Create(ctx, compacted, table.Spec{Compacted: true}); err != nil {
		t.Fatal(err)
	}
	var all [][]table.Record
	for i, round := range compactedRounds() {
		if _, err := tb.Commit(ctx, compacted, round...); err != nil {
			t.Fatalf("compacted round %d: %v", i+1, err)
		}
		for _, r := range round {
			all = append(all, r.Records)
		}
	}
	out = runReader(t, py, []string{"testdata/pyiceberg_read.py", "--rest", srv.URL, compacted.String()},
		map[string]string{"token": token})
	equalRecords(t, out.rows, latest(all...))
}
