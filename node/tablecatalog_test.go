//go:build !notables

package node_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	itable "github.com/apache/iceberg-go/table"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/floe-io/floe/coordinator"
	"github.com/floe-io/floe/internal/testkit"
	"github.com/floe-io/floe/internal/testkit/floetest"
	"github.com/floe-io/floe/internal/testkit/icebergresttest"
	"github.com/floe-io/floe/node"
	"github.com/floe-io/floe/table"
	"github.com/floe-io/floe/tiered"
)

// TestTableExternalCatalog: with Config.TableCatalog (--table-catalog-url)
// a broker creates a table.enabled topic's table in an external Iceberg
// REST catalog, Apache Iceberg's reference server with a bearer token,
// and commits its snapshots there. PyIceberg, through that catalog, reads
// every committed record once and no aborted one; a second batch makes a
// second snapshot while another writer keeps committing to the same
// table, so that the broker's commits lose races to it (the catalog's 409)
// and retry, still without a row twice; the maintenance job applies
// table.retention.ms through the catalog. floe's own /iceberg/v1 says
// where the tables are instead of serving an empty catalog.
func TestTableExternalCatalog(t *testing.T) {
	py := tableReader(t)
	const token = "floe-writer-token"
	srv := icebergresttest.Start(t, icebergresttest.Options{Warehouse: "file://" + filepath.Join(t.TempDir(), "warehouse"), Token: token})
	n := floetest.StartNode(t, node.Config{
		Coordinator: coordinator.Options{TierInterval: 100 * time.Millisecond, TableInterval: 100 * time.Millisecond,
			TableMaintainInterval: 300 * time.Millisecond},
		Tier:         tiered.ConsolidatorOptions{PollInterval: 50 * time.Millisecond},
		TableCatalog: node.TableCatalogConfig{URL: srv.URL, Token: token},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	adm := kadm.NewClient(pinned(t, n.KafkaAddr()))
	if _, err := adm.CreateTopic(ctx, 3, -1, map[string]*string{"table.enabled": kadm.StringPtr("true"),
		"table.retention.ms": kadm.StringPtr("604800000"), "local.retention.ms": kadm.StringPtr("100"),
		"retention.ms": kadm.StringPtr("-1")}, "orders"); err != nil {
		t.Fatal(err)
	}
	cl := pinned(t, n.KafkaAddr(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	txn := pinned(t, n.KafkaAddr(), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.TransactionalID("external-txn"))
	type key struct {
		p int32
		o int64
	}
	want := map[key]*kgo.Record{}
	produce := func(c *kgo.Client, recs ...*kgo.Record) {
		t.Helper()
		res := c.ProduceSync(ctx, recs...)
		if err := res.FirstErr(); err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			if !strings.HasPrefix(string(r.Record.Value), "old") {
				want[key{r.Record.Partition, r.Record.Offset}] = r.Record
			}
		}
	}
	batch := func(from, to int) {
		t.Helper()
		var recs []*kgo.Record
		for i := from; i < to; i++ {
			r := &kgo.Record{Topic: "orders", Partition: int32(i % 3), Key: fmt.Appendf(nil, "k%d", i%7), Value: fmt.Appendf(nil, `{"n":%d}`, i)}
			if i%4 == 0 {
				r.Headers = []kgo.RecordHeader{{Key: "h", Value: []byte("v")}}
			}
			recs = append(recs, r)
		}
		produce(cl, recs...)
	}

	// The table reads the external catalog as the test's own writer does.
	ext, err := table.NewRESTCatalog(table.RESTCatalogOptions{URL: srv.URL, Token: token})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ext.Close() })
	tb, err := table.New(table.Options{External: ext, Store: n.TableStore(), Root: n.TableRoot(), Prefix: n.TablePrefix()})
	if err != nil {
		t.Fatal(err)
	}
	id := table.Ident{Namespace: []string{node.DefaultTableNamespace}, Name: "orders"}
	// caughtUp waits until the table covers every partition's end and
	// holds wantRows rows.
	caughtUp := func(wantRows int) {
		t.Helper()
		ends, err := adm.ListEndOffsets(ctx, "orders")
		if err != nil {
			t.Fatal(err)
		}
		testkit.CheckFor(t, 2*time.Minute, 100*time.Millisecond, func() error {
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
			if at.NumRows() != int64(wantRows) {
				return fmt.Errorf("%d rows, want %d", at.NumRows(), wantRows)
			}
			return nil
		})
	}
	// readBack reads the table with PyIceberg through the external
	// catalog and checks every committed record is there once.
	readBack := func() map[string]string {
		t.Helper()
		out := pyReadCatalog(t, ctx, py, srv.URL, "floe.orders", "token="+token)
		if len(out.listed) != 1 || out.listed[0] != "floe.orders" {
			t.Errorf("the external catalog lists %v", out.listed)
		}
		seen := map[key]bool{}
		for _, r := range out.rows {
			k := key{r.Partition, r.Offset}
			w := want[k]
			switch {
			case seen[k]:
				t.Fatalf("partition %d offset %d twice", k.p, k.o)
			case w == nil:
				t.Fatalf("partition %d offset %d (%q) was never committed, or is past table.retention.ms", k.p, k.o, r.Value)
			case string(r.Value) != string(w.Value) || string(r.Key) != string(w.Key) || len(r.Headers) != len(w.Headers):
				t.Fatalf("partition %d offset %d: %q %q %d headers, want %q %q %d", k.p, k.o, r.Key, r.Value, len(r.Headers), w.Key, w.Value, len(w.Headers))
			}
			seen[k] = true
		}
		if len(out.rows) != len(want) {
			t.Fatalf("%d rows, want the %d committed records", len(out.rows), len(want))
		}
		return out.summary
	}

	// Batch 1: keyed records with headers, 10 records ten days old (past
	// the table's 7 days: the maintenance job takes them out), an
	// aborted transaction, then a committed one.
	batch(0, 90)
	var old []*kgo.Record
	for i := range 10 {
		old = append(old, &kgo.Record{Topic: "orders", Partition: 1, Value: fmt.Appendf(nil, "old %d", i), Timestamp: time.Now().Add(-10 * 24 * time.Hour)})
	}
	produce(cl, old...)
	for _, commit := range []bool{false, true} {
		if err := txn.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		var recs []*kgo.Record
		for p := range int32(3) {
			recs = append(recs, &kgo.Record{Topic: "orders", Partition: p, Value: fmt.Appendf(nil, "txn commit=%v", commit)})
		}
		res := txn.ProduceSync(ctx, recs...)
		if err := res.FirstErr(); err != nil {
			t.Fatal(err)
		}
		if err := txn.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatal(err)
		}
		if commit {
			for _, r := range res {
				want[key{r.Record.Partition, r.Record.Offset}] = r.Record
			}
		}
	}
	caughtUp(len(want))
	first := readBack()
	if skipped, err := floetest.Metric(n.HTTPAddr(), "floe_table_records_skipped_total", `reason="aborted"`); err != nil || skipped < 3 {
		t.Errorf("floe_table_records_skipped_total{reason=aborted} = %v, %v; want at least 3", skipped, err)
	}

	// Batch 2 while another writer commits to the same table through
	// the same catalog, as fast as the catalog takes them, until the
	// broker has lost a race to it. (A property change would not do: the
	// catalog applies it over the broker's append, whose only requirement
	// is the current snapshot.)
	tbl, err := tb.Load(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	snapshots := len(tbl.Metadata().Snapshots())
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var otherCommits int
	var otherErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			err := otherAppend(ctx, ext)
			switch {
			case err == nil:
				otherCommits++
			case errors.Is(err, itable.ErrCommitFailed): // lost to the broker: fine
			default:
				otherErr = err
				return
			}
		}
	}()
	for round := 0; ; round++ {
		batch(1000+round*30, 1000+round*30+30)
		caughtUp(len(want))
		conflicts, _ := floetest.Metric(n.HTTPAddr(), "floe_table_commits_total", `result="conflict"`)
		if conflicts > 0 {
			t.Logf("the broker lost %v commit attempts to the other writer in %d rounds", conflicts, round+1)
			break
		}
		if round == 20 {
			t.Fatal("20 rounds and the broker never lost a commit to the other writer")
		}
	}
	close(stop)
	wg.Wait()
	if otherErr != nil || otherCommits == 0 {
		t.Fatalf("the other writer: %d commits, %v", otherCommits, otherErr)
	}
	second := readBack()
	tbl, err = tb.Load(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if len(tbl.Metadata().Snapshots()) <= snapshots || first[table.SummaryNextOffsetPrefix+"0"] == second[table.SummaryNextOffsetPrefix+"0"] {
		t.Fatalf("no second snapshot: %d snapshots before, %d after; summaries %v, %v", snapshots, len(tbl.Metadata().Snapshots()), first, second)
	}

	// floe's own endpoint points away.
	rsp, err := http.Get("http://" + n.HTTPAddr() + "/iceberg/v1/config")
	if err != nil {
		t.Fatal(err)
	}
	defer rsp.Body.Close()
	var body struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.NewDecoder(rsp.Body).Decode(&body); err != nil || rsp.StatusCode != http.StatusNotFound ||
		!strings.Contains(body.Error.Message, "external Iceberg REST catalog") {
		t.Fatalf("/iceberg/v1/config: %d %+v %v", rsp.StatusCode, body, err)
	}
}

// TestTableCatalogConfig: a bad external catalog configuration stops the
// start with every problem named by its flag.
func TestTableCatalogConfig(t *testing.T) {
	for _, tc := range []struct {
		cfg  node.TableCatalogConfig
		want []string
	}{
		{node.TableCatalogConfig{Token: "t", Warehouse: "w"}, []string{"--table-catalog-token is given without --table-catalog-url", "--table-catalog-warehouse is given without"}},
		{node.TableCatalogConfig{URL: "ftp://x"}, []string{"want http(s)://host"}},
		{node.TableCatalogConfig{URL: "http://u:p@x"}, []string{"carries credentials"}},
		{node.TableCatalogConfig{URL: "https://x", Token: "t", Credential: "c"}, []string{"--table-catalog-token and --table-catalog-credential: give one"}},
		{node.TableCatalogConfig{URL: "https://x", Scope: "s"}, []string{"--table-catalog-scope is given without --table-catalog-credential"}},
		{node.TableCatalogConfig{URL: "https://x"}, nil},
	} {
		err := tc.cfg.Validate()
		if (err == nil) != (tc.want == nil) {
			t.Fatalf("%+v: %v", tc.cfg, err)
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%+v: %v, want %q in it", tc.cfg, err, w)
			}
		}
	}
	_, err := node.Start(context.Background(), node.Config{DataDir: t.TempDir(), TableCatalog: node.TableCatalogConfig{URL: "catalog:8181"}})
	if err == nil || !strings.Contains(err.Error(), "--table-catalog-url") {
		t.Fatalf("start with a bad --table-catalog-url: %v", err)
	}
}

// otherAppend commits, as another writer would, a snapshot of no rows to
// table floe.orders through iceberg-go's own REST client and file IO:
// it moves the table's current snapshot without changing its rows or
// floe's covered offsets (copied from the current summary).
func otherAppend(ctx context.Context, ext table.ExternalCatalog) error {
	cur, err := ext.LoadTable(ctx, itable.Identifier{"floe", "orders"})
	if err != nil {
		return err
	}
	sc, err := itable.SchemaToArrowSchema(cur.Schema(), nil, false, false)
	if err != nil {
		return err
	}
	rdr, err := array.NewRecordReader(sc, nil)
	if err != nil {
		return err
	}
	defer rdr.Release()
	props := iceberg.Properties{}
	if snap := cur.CurrentSnapshot(); snap != nil && snap.Summary != nil {
		for k, v := range snap.Summary.Properties {
			if strings.HasPrefix(k, "floe.") {
				props[k] = v
			}
		}
	}
	txn := cur.NewTransaction()
	if err := txn.Append(ctx, rdr, props); err != nil {
		return err
	}
	_, err = txn.Commit(ctx)
	return err
}
