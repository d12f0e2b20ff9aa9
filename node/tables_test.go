package node_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/coordinator"
	"github.com/floe-io/floe/internal/testkit"
	"github.com/floe-io/floe/internal/testkit/floetest"
	"github.com/floe-io/floe/node"
	"github.com/floe-io/floe/table"
	"github.com/floe-io/floe/tiered"
)

// TestTableJobThroughNode: a table.enabled topic on the embedded default
// becomes an Iceberg table once its records are consolidated: keyed
// records with headers, committed transactions' records in, an aborted
// transaction's out, every (partition, offset) once, read by PyIceberg
// through the node's REST catalog; a topic without the config gets no
// table.
func TestTableJobThroughNode(t *testing.T) {
	n := floetest.StartNode(t, node.Config{
		Coordinator: coordinator.Options{TierInterval: 100 * time.Millisecond, TableInterval: 200 * time.Millisecond},
		Tier:        tiered.ConsolidatorOptions{PollInterval: 50 * time.Millisecond},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	adm := kadm.NewClient(pinned(t, n.KafkaAddr()))
	for _, tc := range []struct {
		topic   string
		configs map[string]*string
	}{
		{"orders", map[string]*string{"table.enabled": kadm.StringPtr("true"), "local.retention.ms": kadm.StringPtr("100"), "retention.ms": kadm.StringPtr("-1")}},
		{"plain", map[string]*string{"local.retention.ms": kadm.StringPtr("100"), "retention.ms": kadm.StringPtr("-1")}},
	} {
		if _, err := adm.CreateTopic(ctx, 3, -1, tc.configs, tc.topic); err != nil {
			t.Fatal(err)
		}
	}
	cl := pinned(t, n.KafkaAddr(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	txn := pinned(t, n.KafkaAddr(), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.TransactionalID("table-txn"))
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
			if r.Record.Topic == "orders" {
				want[key{r.Record.Partition, r.Record.Offset}] = r.Record
			}
		}
	}
	for i := range 120 {
		r := &kgo.Record{Topic: "orders", Partition: int32(i % 3), Key: fmt.Appendf(nil, "k%d", i%7), Value: fmt.Appendf(nil, `{"n":%d}`, i)}
		if i%4 == 0 {
			r.Headers = []kgo.RecordHeader{{Key: "h", Value: []byte("v")}}
		}
		produce(cl, r, &kgo.Record{Topic: "plain", Partition: int32(i % 3), Value: []byte("x")})
	}
	// An aborted transaction, then a committed one.
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
	produce(cl, &kgo.Record{Topic: "orders", Partition: 0, Value: []byte("after the transactions")})

	// Wait until the table covers every partition's high watermark.
	tb, err := table.New(table.Options{Catalog: n.CoordinatorClient().TableCatalog(), Store: n.Store(), Root: n.TableRoot(), Prefix: "tables"})
	if err != nil {
		t.Fatal(err)
	}
	ends, err := adm.ListEndOffsets(ctx, "orders")
	if err != nil {
		t.Fatal(err)
	}
	id := table.Ident{Namespace: []string{node.DefaultTableNamespace}, Name: "orders"}
	testkit.CheckFor(t, time.Minute, 100*time.Millisecond, func() error {
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
		return lag
	})

	// The aborted transaction's 3 records (one a partition) were not
	// written: at least 3 (a job run again counts them again).
	if skipped, err := floetest.Metric(n.HTTPAddr(), "floe_table_records_skipped_total", `reason="aborted"`); err != nil || skipped < 3 {
		t.Errorf("floe_table_records_skipped_total{reason=aborted} = %v, %v; want at least 3", skipped, err)
	}
	testkit.CheckFor(t, 10*time.Second, 50*time.Millisecond, func() error {
		lag, err := floetest.Metric(n.HTTPAddr(), "floe_table_lag_offsets", `topic="orders"`)
		if err == nil && lag != 0 {
			err = fmt.Errorf("table lag %v", lag)
		}
		return err
	})

	py := tableReader(t)
	rows, listed, summary := pyRead(t, ctx, py, n.HTTPAddr(), "floe.orders")
	if len(listed) != 1 || listed[0] != "floe.orders" {
		t.Errorf("the catalog lists %v: a table for a topic without table.enabled?", listed)
	}
	ends.Each(func(o kadm.ListedOffset) {
		if got := summary[table.SummaryNextOffsetPrefix+fmt.Sprint(o.Partition)]; got != fmt.Sprint(o.Offset) {
			t.Errorf("the snapshot PyIceberg read covers partition %d to %s, want %d", o.Partition, got, o.Offset)
		}
	})
	seen := map[key]bool{}
	for _, r := range rows {
		k := key{r.Partition, r.Offset}
		w := want[k]
		switch {
		case seen[k]:
			t.Fatalf("partition %d offset %d twice", k.p, k.o)
		case w == nil:
			t.Fatalf("partition %d offset %d (%q) was never committed", k.p, k.o, r.Value)
		case !bytes.Equal(r.Value, w.Value) || !bytes.Equal(r.Key, w.Key) || len(r.Headers) != len(w.Headers):
			t.Fatalf("partition %d offset %d: %q %q %d headers, want %q %q %d", k.p, k.o, r.Key, r.Value, len(r.Headers), w.Key, w.Value, len(w.Headers))
		}
		seen[k] = true
	}
	if len(rows) != len(want) {
		t.Fatalf("%d rows, want the %d committed records", len(rows), len(want))
	}
}

// TestTableOfRecreatedTopic: a topic deleted and created again under its
// name gets a table of its own: the old one is moved aside as
// <topic>__<old topic id>, keeping its rows, and the new one holds only
// the new topic's records, from offset 0.
func TestTableOfRecreatedTopic(t *testing.T) {
	n := floetest.StartNode(t, node.Config{
		Coordinator: coordinator.Options{TierInterval: 100 * time.Millisecond, TableInterval: 100 * time.Millisecond},
		Tier:        tiered.ConsolidatorOptions{PollInterval: 50 * time.Millisecond},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	adm := kadm.NewClient(pinned(t, n.KafkaAddr()))
	cl := pinned(t, n.KafkaAddr())
	tb, err := table.New(table.Options{Catalog: n.CoordinatorClient().TableCatalog(), Store: n.Store(), Root: n.TableRoot(), Prefix: "tables"})
	if err != nil {
		t.Fatal(err)
	}
	configs := map[string]*string{"table.enabled": kadm.StringPtr("true"), "local.retention.ms": kadm.StringPtr("100"), "retention.ms": kadm.StringPtr("-1")}
	round := func(id table.Ident, records int) kadm.CreateTopicResponse {
		t.Helper()
		created, err := adm.CreateTopic(ctx, 1, -1, configs, "orders")
		if err != nil {
			t.Fatal(err)
		}
		for i := range records {
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: fmt.Appendf(nil, "v%d", i)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		testkit.CheckFor(t, time.Minute, 50*time.Millisecond, func() error {
			covered, err := tb.Covered(ctx, id)
			if err == nil && covered[0] != int64(records) {
				err = fmt.Errorf("covered %v, want %d", covered, records)
			}
			return err
		})
		return created
	}
	orders := table.Ident{Namespace: []string{node.DefaultTableNamespace}, Name: "orders"}
	first := round(orders, 7)
	if _, err := adm.DeleteTopic(ctx, "orders"); err != nil {
		t.Fatal(err)
	}
	testkit.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		td, err := adm.ListTopics(ctx, "orders")
		if err == nil && td.Has("orders") {
			err = fmt.Errorf("orders still listed")
		}
		return err
	})
	round(orders, 3) // waits for the new table to cover the new topic's 3 records, not the old 7
	aside := table.Ident{Namespace: orders.Namespace, Name: "orders__" + coordapi.TopicID(first.ID).String()}
	cov, err := tb.Covered(ctx, aside)
	if err != nil || cov[0] != 7 {
		t.Fatalf("the old table moved aside: covered %v, %v", cov, err)
	}
	ids, err := n.CoordinatorClient().TableCatalog().List(ctx, orders.Namespace)
	if err != nil || len(ids) != 2 {
		t.Fatalf("tables %v, %v", ids, err)
	}
}

// TestTableValueSchemaEvolves: a table.value.schema=json topic's table
// has a typed column per property of its JSON Schema; a property added
// to the definition with AlterConfigs mid-stream becomes a column of the
// next job's snapshot, null in the rows before it, and a value that does
// not parse keeps its raw columns with an _error.
func TestTableValueSchemaEvolves(t *testing.T) {
	py := tableReader(t)
	n := floetest.StartNode(t, node.Config{
		Coordinator: coordinator.Options{TierInterval: 100 * time.Millisecond, TableInterval: 100 * time.Millisecond},
		Tier:        tiered.ConsolidatorOptions{PollInterval: 50 * time.Millisecond},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	adm := kadm.NewClient(pinned(t, n.KafkaAddr()))
	cl := pinned(t, n.KafkaAddr())
	tb, err := table.New(table.Options{Catalog: n.CoordinatorClient().TableCatalog(), Store: n.Store(), Root: n.TableRoot(), Prefix: "tables"})
	if err != nil {
		t.Fatal(err)
	}
	id := table.Ident{Namespace: []string{node.DefaultTableNamespace}, Name: "users"}
	v1 := `{"type":"object","properties":{"id":{"type":"integer"}}}`
	v2 := `{"type":"object","properties":{"id":{"type":"integer"},"name":{"type":"string"}}}`
	if _, err := adm.CreateTopic(ctx, 1, -1, map[string]*string{"table.enabled": kadm.StringPtr("true"), "table.value.schema": kadm.StringPtr("json"),
		"table.value.schema.definition": kadm.StringPtr(v1), "local.retention.ms": kadm.StringPtr("100"), "retention.ms": kadm.StringPtr("-1")}, "users"); err != nil {
		t.Fatal(err)
	}
	covers := func(to int64) {
		t.Helper()
		testkit.CheckFor(t, time.Minute, 50*time.Millisecond, func() error {
			covered, err := tb.Covered(ctx, id)
			if err == nil && covered[0] != to {
				err = fmt.Errorf("covered %v, want %d", covered, to)
			}
			return err
		})
	}
	produce := func(values ...string) {
		t.Helper()
		for _, v := range values {
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "users", Value: []byte(v)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	produce(`{"id":1}`, `{"id":2,"name":"early"}`, `not json`)
	covers(3)
	if _, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "table.value.schema.definition", Value: kadm.StringPtr(v2)}}, "users"); err != nil {
		t.Fatal(err)
	}
	produce(`{"id":3,"name":"later"}`)
	covers(4)

	rows := pyReadTable(t, ctx, py, n.HTTPAddr(), "floe.users").rows
	want := []struct{ id, name, errSet string }{
		{"1", "null", "no"}, {"2", "null", "no"}, {"null", "null", "yes"}, {"3", `"later"`, "no"},
	}
	if len(rows) != len(want) {
		t.Fatalf("%d rows, want %d", len(rows), len(want))
	}
	for i, w := range want {
		typed := rows[i].typed
		errSet := "no"
		if typed["_error"] != "null" && typed["_error"] != "" {
			errSet = "yes"
		}
		if typed["id"] != w.id || typed["name"] != w.name || errSet != w.errSet {
			t.Errorf("offset %d: typed %v, want id %s name %s error %s", rows[i].Offset, typed, w.id, w.name, w.errSet)
		}
	}
}

// TestTableRetentionThroughNode: table.retention.ms is applied by the
// table maintenance job: records older than it leave the table (their
// day's data files, in a delete snapshot), newer ones stay, the covered
// offsets stay where the table job put them, and the topic keeps every
// record (retention.ms is its own).
func TestTableRetentionThroughNode(t *testing.T) {
	n := floetest.StartNode(t, node.Config{
		Coordinator: coordinator.Options{TierInterval: 100 * time.Millisecond, TableInterval: 100 * time.Millisecond,
			TableMaintainInterval: 300 * time.Millisecond},
		Tier: tiered.ConsolidatorOptions{PollInterval: 50 * time.Millisecond},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	adm := kadm.NewClient(pinned(t, n.KafkaAddr()))
	if _, err := adm.CreateTopic(ctx, 1, -1, map[string]*string{"table.enabled": kadm.StringPtr("true"),
		"table.retention.ms": kadm.StringPtr("604800000"), "local.retention.ms": kadm.StringPtr("100"), "retention.ms": kadm.StringPtr("-1")}, "events"); err != nil {
		t.Fatal(err)
	}
	cl := pinned(t, n.KafkaAddr())
	now := time.Now()
	const old, recent = 30, 20
	var recs []*kgo.Record
	for i := range old + recent {
		ts := now.Add(-10 * 24 * time.Hour) // past the table's 7 days
		if i >= old {
			ts = now
		}
		recs = append(recs, &kgo.Record{Topic: "events", Value: fmt.Appendf(nil, "%d", i), Timestamp: ts})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	tb, err := table.New(table.Options{Catalog: n.CoordinatorClient().TableCatalog(), Store: n.Store(), Root: n.TableRoot(), Prefix: "tables"})
	if err != nil {
		t.Fatal(err)
	}
	id := table.Ident{Namespace: []string{node.DefaultTableNamespace}, Name: "events"}
	testkit.CheckFor(t, time.Minute, 100*time.Millisecond, func() error {
		covered, err := tb.Covered(ctx, id)
		if err != nil {
			return err
		}
		if covered[0] != old+recent {
			return fmt.Errorf("covered to %d of %d", covered[0], old+recent)
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
		if at.NumRows() != recent {
			return fmt.Errorf("%d rows, want the %d recent ones", at.NumRows(), recent)
		}
		if op := tbl.CurrentSnapshot().Summary.Operation; op != "delete" && op != "append" {
			return fmt.Errorf("current snapshot's operation %q", op)
		}
		return nil
	})
	// Covered: no lag, in offsets or seconds.
	testkit.CheckFor(t, 10*time.Second, 50*time.Millisecond, func() error {
		for _, m := range []string{"floe_table_lag_offsets", "floe_table_lag_seconds"} {
			if v, err := floetest.Metric(n.HTTPAddr(), m, `topic="events"`); err != nil || v != 0 {
				return fmt.Errorf("%s = %v, %v", m, v, err)
			}
		}
		return nil
	})
	// The topic still has them all.
	starts, err := adm.ListStartOffsets(ctx, "events")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := starts.Lookup("events", 0); o.Offset != 0 {
		t.Fatalf("the topic's log start is %d: table.retention.ms deleted from the topic", o.Offset)
	}
}

// TestTableLocation: with Config.TableLocation (--table-location) a
// topic's table goes there, not under the node's store, and the REST
// catalog serves it from there; a location that is not s3://bucket/path
// or file:///dir stops the node from starting.
func TestTableLocation(t *testing.T) {
	for _, tc := range []struct{ name, loc string }{
		{"relative file", "file://lake"},
		{"file without a path", "file:///"},
		{"s3 without a bucket", "s3:///path"},
		{"another scheme", "gs://bucket/path"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, err := node.Start(context.Background(), node.Config{DataDir: t.TempDir(), KafkaAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0",
				TableLocation: tc.loc, Logger: testkit.Logger()})
			if err == nil {
				_ = n.Close(context.Background())
				t.Fatalf("started with --table-location %q", tc.loc)
			}
			if !strings.Contains(err.Error(), "--table-location") {
				t.Fatalf("start: %v; want an error about --table-location", err)
			}
		})
	}

	lake := t.TempDir()
	n := floetest.StartNode(t, node.Config{
		Coordinator:   coordinator.Options{TierInterval: 100 * time.Millisecond, TableInterval: 100 * time.Millisecond},
		Tier:          tiered.ConsolidatorOptions{PollInterval: 50 * time.Millisecond},
		TableLocation: "file://" + lake + "/warehouse",
	})
	if got, want := n.TableRoot(), "file://"+lake; got != want || n.TablePrefix() != "warehouse" {
		t.Fatalf("table root %q prefix %q, want %q and warehouse", got, n.TablePrefix(), want)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	adm := kadm.NewClient(pinned(t, n.KafkaAddr()))
	if _, err := adm.CreateTopic(ctx, 1, -1, map[string]*string{"table.enabled": kadm.StringPtr("true"),
		"local.retention.ms": kadm.StringPtr("100"), "retention.ms": kadm.StringPtr("-1")}, "lakes"); err != nil {
		t.Fatal(err)
	}
	if err := pinned(t, n.KafkaAddr()).ProduceSync(ctx, &kgo.Record{Topic: "lakes", Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	tb, err := table.New(table.Options{Catalog: n.CoordinatorClient().TableCatalog(), Store: n.TableStore(), Root: n.TableRoot(), Prefix: n.TablePrefix()})
	if err != nil {
		t.Fatal(err)
	}
	id := table.Ident{Namespace: []string{node.DefaultTableNamespace}, Name: "lakes"}
	testkit.CheckFor(t, 30*time.Second, 50*time.Millisecond, func() error {
		covered, err := tb.Covered(ctx, id)
		if err == nil && covered[0] != 1 {
			err = fmt.Errorf("covered %v", covered)
		}
		return err
	})
	tbl, err := tb.Load(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if loc := tbl.MetadataLocation(); !strings.HasPrefix(loc, "file://"+lake+"/warehouse/floe/lakes-") {
		t.Fatalf("metadata at %s, not under the table location", loc)
	}
	if keys, err := n.Store().List(ctx, "tables/"); err != nil || len(keys) != 0 {
		t.Fatalf("the node's store holds %d table files (%v)", len(keys), err)
	}
	resp, err := http.Get("http://" + n.HTTPAddr() + "/iceberg/v1/namespaces/floe/tables/lakes")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var loaded struct {
		Location string `json:"metadata-location"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&loaded); err != nil || resp.StatusCode != http.StatusOK || loaded.Location != tbl.MetadataLocation() {
		t.Fatalf("REST catalog: %s, %q, %v; want %s", resp.Status, loaded.Location, err, tbl.MetadataLocation())
	}
}
