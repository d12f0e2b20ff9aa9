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

// TestCompactedTopicAsIcebergTable (issue 41, M6) runs a coordinator
// process and two brokers on MinIO: a table.enabled topic with
// cleanup.policy=compact, keys overwritten and deleted in three rounds
// (each waited into the table), an aborted transaction over live keys,
// broker 1 killed (-9) after the first round. PyIceberg and DuckDB's
// iceberg extension, through broker 2's REST catalog, read one row per
// live key, its latest value, and none for a deleted key.
func TestCompactedTopicAsIcebergTable(t *testing.T) {
	if os.Getenv("FLOE_PYTHON") == "" {
		t.Skip("no FLOE_PYTHON with PyIceberg: eval \"$(./scripts/table-readers-venv.sh)\"")
	}
	c := floetest.RunClusterWith(t, 2, floetest.ClusterOptions{
		CoordinatorArgs: []string{"--tier-interval", "200ms", "--table-interval", "1s", "--tier-job-lease", "10s"},
		BrokerArgs:      []string{"--tier-poll-interval", "100ms"},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const topic = "profiles"
	adm := kadm.NewClient(pinnedClient(t, c.Brokers[1].KafkaAddr)) // broker 2 stays up
	if _, err := adm.CreateTopic(ctx, 4, -1, map[string]*string{
		"table.enabled": kadm.StringPtr("true"), "cleanup.policy": kadm.StringPtr("compact"),
		"table.partitioning": kadm.StringPtr("bucket[8](key)"), "local.retention.ms": kadm.StringPtr("300"),
	}, topic); err != nil {
		t.Fatal(err)
	}
	live := map[string]string{} // key → latest value; absent: deleted
	produce := func(cl *kgo.Client, recs ...*kgo.Record) {
		t.Helper()
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if r.Value == nil {
				delete(live, string(r.Key))
			} else {
				live[string(r.Key)] = string(r.Value)
			}
		}
	}
	rec := func(k int, v string) *kgo.Record {
		r := &kgo.Record{Topic: topic, Key: fmt.Appendf(nil, "user-%04d", k)}
		if v != "" {
			r.Value = []byte(v)
		}
		return r
	}
	nc := natstest.Connect(t, c.NATS)
	cat := rpc.NewClient(nc, floetest.ClusterName, rpc.ClientOptions{Timeout: 5 * time.Second, Logger: testkit.Logger()}).TableCatalog()
	tb, err := table.New(table.Options{Catalog: cat, Store: c.MinIO.Store(t), Root: "s3://" + c.MinIO.Bucket, Prefix: "tables"})
	if err != nil {
		t.Fatal(err)
	}
	id := table.Ident{Namespace: []string{"floe"}, Name: topic}
	intoTable := func(round int) {
		t.Helper()
		ends, err := adm.ListEndOffsets(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		testkit.CheckFor(t, 2*time.Minute, 200*time.Millisecond, func() error {
			covered, err := tb.Covered(ctx, id)
			if err != nil {
				return err
			}
			var lag error
			ends.Each(func(o kadm.ListedOffset) {
				if covered[o.Partition] < o.Offset {
					lag = fmt.Errorf("round %d: partition %d covered to %d of %d", round, o.Partition, covered[o.Partition], o.Offset)
				}
			})
			return lag
		})
	}
	b1, b2 := pinnedClient(t, c.Brokers[0].KafkaAddr), pinnedClient(t, c.Brokers[1].KafkaAddr)

	// Round 1: 1,000 keys, each written 5 times.
	var recs []*kgo.Record
	for v := range 5 {
		for k := range 1000 {
			recs = append(recs, rec(k, fmt.Sprintf("r1.%d user-%04d", v, k)))
		}
	}
	produce(b1, recs...)
	intoTable(1)
	c.Brokers[0].Kill() // whatever it was running: its job is planned again

	// Round 2: every third key overwritten, keys 0-99 deleted, an aborted
	// transaction over keys 500-599.
	recs = recs[:0]
	for k := 0; k < 1000; k += 3 {
		recs = append(recs, rec(k, fmt.Sprintf("r2 user-%04d", k)))
	}
	for k := range 100 {
		recs = append(recs, rec(k, ""))
	}
	produce(b2, recs...)
	tx := pinnedClient(t, c.Brokers[1].KafkaAddr, kgo.TransactionalID("profiles-txn"))
	if err := tx.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	recs = recs[:0]
	for k := 500; k < 600; k++ {
		recs = append(recs, rec(k, "aborted"))
	}
	if err := tx.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := tx.EndTransaction(ctx, kgo.TransactionEndTry(false)); err != nil {
		t.Fatal(err)
	}
	intoTable(2)

	// Round 3: keys 50-59 back, key 1,000 new, every seventh overwritten.
	recs = recs[:0]
	for k := 50; k < 60; k++ {
		recs = append(recs, rec(k, fmt.Sprintf("r3 back user-%04d", k)))
	}
	for k := 0; k < 1001; k += 7 {
		recs = append(recs, rec(k, fmt.Sprintf("r3 user-%04d", k)))
	}
	produce(b2, recs...)
	intoTable(3)

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
			seen := map[string]bool{}
			sc := bufio.NewScanner(bytes.NewReader(out))
			sc.Buffer(nil, 1<<20)
			for sc.Scan() {
				var row struct {
					Tables  []string          `json:"tables"`
					Summary map[string]string `json:"summary"`
					Key     []byte            `json:"key"`
					Value   []byte            `json:"value"`
				}
				if err := json.Unmarshal(sc.Bytes(), &row); err != nil {
					t.Fatalf("%v: %s", err, sc.Text())
				}
				if row.Tables != nil || row.Summary != nil {
					continue
				}
				k := string(row.Key)
				w, ok := live[k]
				switch {
				case seen[k]:
					t.Fatalf("key %s twice", k)
				case !ok:
					t.Fatalf("key %s (%q) has a row but is deleted", k, row.Value)
				case string(row.Value) != w:
					t.Fatalf("key %s = %q, want its latest %q", k, row.Value, w)
				}
				seen[k] = true
			}
			if len(seen) != len(live) {
				t.Fatalf("%s read %d rows, want the %d live keys", rd.name, len(seen), len(live))
			}
		})
	}
}
