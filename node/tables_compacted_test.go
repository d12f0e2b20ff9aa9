package node_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/floe-io/floe/coordinator"
	"github.com/floe-io/floe/internal/testkit"
	"github.com/floe-io/floe/internal/testkit/floetest"
	"github.com/floe-io/floe/node"
	"github.com/floe-io/floe/table"
	"github.com/floe-io/floe/tiered"
)

// TestCompactedTableThroughNode: a table.enabled topic with
// cleanup.policy=compact becomes a table of the latest value per key:
// keys written, overwritten and deleted over three rounds (each waited
// into the table, so each is its own overwrite snapshot), an aborted
// transaction's values never seen, a committed one's are; PyIceberg,
// through the node's REST catalog, reads exactly one row per live key
// with its latest value, and the summary covers every offset.
func TestCompactedTableThroughNode(t *testing.T) {
	n := floetest.StartNode(t, node.Config{
		Coordinator: coordinator.Options{TierInterval: 100 * time.Millisecond, TableInterval: 200 * time.Millisecond},
		Tier:        tiered.ConsolidatorOptions{PollInterval: 50 * time.Millisecond},
	})
	py := tableReader(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	adm := kadm.NewClient(pinned(t, n.KafkaAddr()))
	if _, err := adm.CreateTopic(ctx, 2, -1, map[string]*string{
		"table.enabled": kadm.StringPtr("true"), "cleanup.policy": kadm.StringPtr("compact"),
		"local.retention.ms": kadm.StringPtr("100"),
	}, "users"); err != nil {
		t.Fatal(err)
	}
	cl := pinned(t, n.KafkaAddr(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	txn := pinned(t, n.KafkaAddr(), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.TransactionalID("users-txn"))
	tb, err := table.New(table.Options{Catalog: n.CoordinatorClient().TableCatalog(), Store: n.Store(), Root: n.TableRoot(), Prefix: "tables"})
	if err != nil {
		t.Fatal(err)
	}
	id := table.Ident{Namespace: []string{node.DefaultTableNamespace}, Name: "users"}

	// live is what the table must hold: each live key's latest value.
	live := map[string][]byte{}
	// rec is key u<i>'s record in its partition (i%2); a nil value is a
	// tombstone.
	rec := func(i int, v []byte) *kgo.Record {
		return &kgo.Record{Topic: "users", Partition: int32(i % 2), Key: fmt.Appendf(nil, "u%02d", i), Value: v}
	}
	produce := func(recs ...*kgo.Record) {
		t.Helper()
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if r.Value == nil {
				delete(live, string(r.Key))
			} else {
				live[string(r.Key)] = r.Value
			}
		}
	}
	transaction := func(commit bool, recs ...*kgo.Record) {
		t.Helper()
		if err := txn.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		if err := txn.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
		if err := txn.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatal(err)
		}
		if commit {
			for _, r := range recs {
				live[string(r.Key)] = r.Value
			}
		}
	}
	// intoTable waits until the table covers every partition's end.
	intoTable := func(round int) {
		t.Helper()
		ends, err := adm.ListEndOffsets(ctx, "users")
		if err != nil {
			t.Fatal(err)
		}
		testkit.CheckFor(t, time.Minute, 100*time.Millisecond, func() error {
			covered, err := tb.Covered(ctx, id)
			if err != nil {
				return err
			}
			var lag error
			ends.Each(func(o kadm.ListedOffset) {
				if covered[o.Partition] != o.Offset {
					lag = fmt.Errorf("round %d: partition %d covered to %d of %d", round, o.Partition, covered[o.Partition], o.Offset)
				}
			})
			return lag
		})
	}

	// Round 1: 20 keys, each written twice.
	for v := range 2 {
		for i := range 20 {
			produce(rec(i, fmt.Appendf(nil, "r1.%d-u%02d", v, i)))
		}
	}
	intoTable(1)
	// Round 2: u00-u09 overwritten, u10-u14 deleted, an aborted
	// transaction over u15-u17.
	for i := range 10 {
		produce(rec(i, fmt.Appendf(nil, "r2-u%02d", i)))
	}
	for i := 10; i < 15; i++ {
		produce(rec(i, nil))
	}
	transaction(false, rec(15, []byte("aborted")), rec(16, []byte("aborted")), rec(17, []byte("aborted")))
	intoTable(2)
	// Round 3: u00-u04 overwritten again, u05 deleted, u10 back, a new
	// key, and a committed transaction over u18 and u19.
	for i := range 5 {
		produce(rec(i, fmt.Appendf(nil, "r3-u%02d", i)))
	}
	produce(rec(5, nil), rec(10, []byte("r3-u10 again")), rec(20, []byte("r3-u20 new")))
	transaction(true, rec(18, []byte("r3-u18 txn")), rec(19, []byte("r3-u19 txn")))
	intoTable(3)

	tbl, err := tb.Load(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if op := tbl.CurrentSnapshot().Summary.Operation; op != "overwrite" {
		t.Errorf("the last snapshot's operation is %q, want overwrite", op)
	}
	rows, _, summary := pyRead(t, ctx, py, n.HTTPAddr(), "floe.users")
	ends, err := adm.ListEndOffsets(ctx, "users")
	if err != nil {
		t.Fatal(err)
	}
	ends.Each(func(o kadm.ListedOffset) {
		if got := summary[table.SummaryNextOffsetPrefix+fmt.Sprint(o.Partition)]; got != fmt.Sprint(o.Offset) {
			t.Errorf("the snapshot PyIceberg read covers partition %d to %s, want %d", o.Partition, got, o.Offset)
		}
	})
	seen := map[string]bool{}
	for _, r := range rows {
		k := string(r.Key)
		w, ok := live[k]
		switch {
		case seen[k]:
			t.Errorf("key %s twice", k)
		case !ok:
			t.Errorf("key %s (%q) has a row but is deleted or never committed", k, r.Value)
		case !bytes.Equal(r.Value, w):
			t.Errorf("key %s = %q, want its latest %q", k, r.Value, w)
		}
		var i int
		if _, err := fmt.Sscanf(k, "u%d", &i); err != nil || int32(i%2) != r.Partition {
			t.Errorf("key %s in partition %d", k, r.Partition)
		}
		seen[k] = true
	}
	if len(rows) != len(live) {
		t.Fatalf("%d rows, want the %d live keys", len(rows), len(live))
	}
}
