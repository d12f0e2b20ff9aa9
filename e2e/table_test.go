package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/floe-io/floe/coordinator/rpc"
	"github.com/floe-io/floe/internal/testkit"
	"github.com/floe-io/floe/internal/testkit/floetest"
	"github.com/floe-io/floe/internal/testkit/natstest"
	"github.com/floe-io/floe/table"
	"github.com/floe-io/floe/table/catalog"
)

// TestTopicAsIcebergTable (issue 41) runs a coordinator process and two
// brokers on MinIO: 100,000 records produced to a table.enabled topic
// (keyed, some with headers, JSON values, an aborted transaction and a
// committed one among them) become an Iceberg table once consolidated,
// while broker 1 is killed (-9) after the table's first snapshot and
// records keep coming through broker 2, and the coordinator is killed
// (-9) and started again on its state. Two readers nobody here wrote,
// PyIceberg and DuckDB's iceberg extension, read it through broker 2's
// REST catalog: every committed record once, byte-equal, the aborted
// ones absent.
func TestTopicAsIcebergTable(t *testing.T) {
	py := os.Getenv("FLOE_PYTHON")
	if py == "" {
		t.Skip("no FLOE_PYTHON with PyIceberg: eval \"$(./scripts/table-readers-venv.sh)\"")
	}
	c := floetest.RunClusterWith(t, 2, floetest.ClusterOptions{
		// A short lease: the job of the broker killed is planned again
		// once it ends.
		CoordinatorArgs: []string{"--tier-interval", "200ms", "--table-interval", "1s", "--tier-job-lease", "10s"},
		BrokerArgs:      []string{"--tier-poll-interval", "100ms"},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const topic = "events"
	adm := kadm.NewClient(pinnedClient(t, c.Brokers[1].KafkaAddr)) // broker 2 stays up
	if _, err := adm.CreateTopic(ctx, 4, -1, map[string]*string{
		"table.enabled": kadm.StringPtr("true"), "local.retention.ms": kadm.StringPtr("300"), "retention.ms": kadm.StringPtr("-1"),
	}, topic); err != nil {
		t.Fatal(err)
	}
	type key struct {
		p int32
		o int64
	}
	want := map[key]*kgo.Record{}
	produce := func(cl *kgo.Client, from, n int) {
		t.Helper()
		var recs []*kgo.Record
		for i := from; i < from+n; i++ {
			r := &kgo.Record{Topic: topic, Key: fmt.Appendf(nil, "user-%d", i%97), Value: fmt.Appendf(nil, `{"i":%d,"pad":"%0*d"}`, i, i%50, 0)}
			if i%3 == 0 {
				r.Headers = []kgo.RecordHeader{{Key: "trace", Value: fmt.Appendf(nil, "t%d", i)}, {Key: "trace", Value: nil}}
			}
			recs = append(recs, r)
		}
		res := cl.ProduceSync(ctx, recs...)
		if err := res.FirstErr(); err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			want[key{r.Record.Partition, r.Record.Offset}] = r.Record
		}
	}
	txn := func(addr string, commit bool) {
		t.Helper()
		cl := pinnedClient(t, addr, kgo.TransactionalID(fmt.Sprintf("table-txn-%v", commit)))
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		var recs []*kgo.Record
		for i := range 40 {
			recs = append(recs, &kgo.Record{Topic: topic, Key: fmt.Appendf(nil, "txn-%d", i), Value: fmt.Appendf(nil, "commit=%v %d", commit, i)})
		}
		res := cl.ProduceSync(ctx, recs...)
		if err := res.FirstErr(); err != nil {
			t.Fatal(err)
		}
		if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatal(err)
		}
		if commit {
			for _, r := range res {
				want[key{r.Record.Partition, r.Record.Offset}] = r.Record
			}
		}
	}
	b1, b2 := pinnedClient(t, c.Brokers[0].KafkaAddr), pinnedClient(t, c.Brokers[1].KafkaAddr)
	produce(b1, 0, 40000)
	txn(c.Brokers[0].KafkaAddr, false)
	produce(b2, 40000, 40000)
	txn(c.Brokers[1].KafkaAddr, true)

	// The table's pointer, through the coordinator's catalog over NATS.
	nc := natstest.Connect(t, c.NATS)
	cat := rpc.NewClient(nc, floetest.ClusterName, rpc.ClientOptions{Timeout: 5 * time.Second, Logger: testkit.Logger()}).TableCatalog()
	tb, err := table.New(table.Options{Catalog: cat, Store: c.MinIO.Store(t), Root: "s3://" + c.MinIO.Bucket, Prefix: "tables"})
	if err != nil {
		t.Fatal(err)
	}
	id := table.Ident{Namespace: []string{"floe"}, Name: topic}
	covers := func(ends kadm.ListedOffsets) func() error {
		return func() error {
			covered, err := tb.Covered(ctx, id)
			if err != nil {
				return err
			}
			var lag error
			ends.Each(func(o kadm.ListedOffset) {
				if covered[o.Partition] < o.Offset {
					lag = fmt.Errorf("partition %d covered to %d of %d", o.Partition, covered[o.Partition], o.Offset)
				}
			})
			return lag
		}
	}
	testkit.CheckFor(t, time.Minute, 200*time.Millisecond, func() error {
		covered, err := tb.Covered(ctx, id)
		if err == nil && len(covered) == 0 {
			err = fmt.Errorf("no snapshot yet")
		}
		return err // the first snapshot
	})
	c.Brokers[0].Kill() // whatever it was running: its job is planned again
	produce(b2, 80000, 15000)
	// The coordinator killed with table jobs planned or running, and
	// started again on its state: it forgets the jobs and its copy of the
	// covered offsets, and the next job starts at the log start and skips
	// what the table's snapshot covers.
	c.Coord.Kill()
	c.StartCoordinator()
	produce(b2, 95000, 5000)
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	testkit.CheckFor(t, 2*time.Minute, 200*time.Millisecond, covers(ends))

	props := []string{"s3.access-key-id=" + c.MinIO.AccessKey, "s3.secret-access-key=" + c.MinIO.SecretKey}
	duckProps := append([]string{"s3.endpoint=" + c.MinIO.Endpoint, "s3.region=" + c.MinIO.Region}, props...)
	uri := "http://" + c.Brokers[1].HTTPAddr + catalog.RESTPrefix
	for _, rd := range []struct {
		name, env, script string
		props             []string
	}{
		{"pyiceberg", "FLOE_PYTHON", "../table/testdata/pyiceberg_read.py", props},
		{"duckdb", "FLOE_DUCKDB_PYTHON", "../table/testdata/duckdb_read.py", duckProps},
	} {
		t.Run(rd.name, func(t *testing.T) {
			py := os.Getenv(rd.env)
			if py == "" {
				t.Skipf("no %s: eval \"$(./scripts/table-readers-venv.sh)\"", rd.env)
			}
			cmd := exec.CommandContext(ctx, py, append([]string{rd.script, "--rest", uri, "floe." + topic}, rd.props...)...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("%s: %v\n%s", rd.name, err, stderr.String())
			}
			seen := map[key]bool{}
			sc := bufio.NewScanner(bytes.NewReader(out))
			sc.Buffer(nil, 1<<20)
			for sc.Scan() {
				var row struct {
					Tables    []string          `json:"tables"`
					Summary   map[string]string `json:"summary"`
					Partition int32             `json:"partition"`
					Offset    int64             `json:"offset"`
					Key       []byte            `json:"key"`
					Value     []byte            `json:"value"`
					Headers   [][2]*string      `json:"headers"`
				}
				if err := json.Unmarshal(sc.Bytes(), &row); err != nil {
					t.Fatalf("%v: %s", err, sc.Text())
				}
				if row.Tables != nil || row.Summary != nil {
					continue
				}
				k := key{row.Partition, row.Offset}
				w := want[k]
				switch {
				case seen[k]:
					t.Fatalf("partition %d offset %d twice", k.p, k.o)
				case w == nil:
					t.Fatalf("partition %d offset %d (%q) was never committed", k.p, k.o, row.Value)
				case !bytes.Equal(row.Value, w.Value) || !bytes.Equal(row.Key, w.Key) || len(row.Headers) != len(w.Headers):
					t.Fatalf("partition %d offset %d: %q %q %d headers, want %q %q %d", k.p, k.o, row.Key, row.Value, len(row.Headers), w.Key, w.Value, len(w.Headers))
				}
				seen[k] = true
			}
			if len(seen) != len(want) {
				t.Fatalf("%s read %d rows, want the %d committed records", rd.name, len(seen), len(want))
			}
		})
	}
}
