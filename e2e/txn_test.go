package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/broker"
	"github.com/floe-io/floe/internal/testkit/floetest"
	"github.com/floe-io/floe/node"
)

// consumeValues reads topic from the start with opts until it has want
// records or the partition ends (a fetch returns nothing for a while),
// and returns the values in order.
func consumeValues(t *testing.T, addr, topic string, want int, opts ...kgo.Opt) []string {
	t.Helper()
	cl := newFranzClient(t, addr, append([]kgo.Opt{kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())}, opts...)...)
	var got []string
	deadline := time.Now().Add(20 * time.Second)
	for len(got) < want && time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		fs := cl.PollFetches(ctx)
		cancel()
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	return got
}

// TestTransactions: a franz-go transactional producer commits one
// transaction and aborts another; read_committed consumers (franz-go and
// kcat, librdkafka's default) see only the committed records, with their
// markers skipped; read_uncommitted sees both; kadm describes the
// transactional id and its producer.
func TestTransactions(t *testing.T) {
	n := floetest.StartNode(t, node.Config{Broker: broker.Options{AutoCreateTopics: true}})
	ctx := context.Background()
	adm := kadm.NewClient(newFranzClient(t, n.KafkaAddr()))
	if _, err := adm.CreateTopic(ctx, 2, 1, nil, "tx"); err != nil {
		t.Fatal(err)
	}
	prod := newFranzClient(t, n.KafkaAddr(), kgo.TransactionalID("tx-app"), kgo.DefaultProduceTopic("tx"))
	txn := func(commit bool, values ...string) {
		t.Helper()
		if err := prod.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for i, v := range values {
			if err := prod.ProduceSync(ctx, &kgo.Record{Key: []byte(fmt.Sprint(i)), Value: []byte(v)}).FirstErr(); err != nil {
				t.Fatalf("produce %s: %v", v, err)
			}
		}
		if err := prod.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatalf("end transaction (commit %v): %v", commit, err)
		}
	}
	txn(true, "c1", "c2", "c3", "c4")
	txn(false, "a1", "a2", "a3", "a4")
	txn(true, "c5", "c6")

	committed := consumeValues(t, n.KafkaAddr(), "tx", 6, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	slices.Sort(committed)
	if strings.Join(committed, ",") != "c1,c2,c3,c4,c5,c6" {
		t.Fatalf("read_committed read %v", committed)
	}
	all := consumeValues(t, n.KafkaAddr(), "tx", 10)
	slices.Sort(all)
	if strings.Join(all, ",") != "a1,a2,a3,a4,c1,c2,c3,c4,c5,c6" {
		t.Fatalf("read_uncommitted read %v", all)
	}
	// kcat reads read_committed by default (librdkafka's isolation.level).
	out, _ := runKcat(t, 30*time.Second, "", "-b", n.KafkaAddr(), "-C", "-t", "tx", "-o", "beginning", "-e", "-q")
	lines := strings.Fields(out)
	slices.Sort(lines)
	if strings.Join(lines, ",") != "c1,c2,c3,c4,c5,c6" {
		t.Fatalf("kcat read %q", out)
	}
	// A committed consumer's end is the LSO: every marker is below it.
	offs, err := adm.ListEndOffsets(ctx, "tx")
	if err != nil {
		t.Fatal(err)
	}
	var end int64
	offs.Each(func(o kadm.ListedOffset) { end += o.Offset })
	if end != 10+2*3 { // 10 records and a marker per partition per transaction
		t.Fatalf("end offsets sum %d, want 16", end)
	}

	described, err := adm.DescribeTransactions(ctx, "tx-app")
	if err != nil {
		t.Fatal(err)
	}
	d, ok := described["tx-app"]
	if !ok || d.Err != nil || d.State != "CompleteCommit" {
		t.Fatalf("describe transactions: %+v", described)
	}
	listed, err := adm.ListTransactions(ctx, nil, nil)
	if err != nil || len(listed) != 1 {
		t.Fatalf("list transactions: %+v, %v", listed, err)
	}
	producers, err := adm.DescribeProducers(ctx, kadm.TopicsSet{"tx": {0: {}, 1: {}}})
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	producers.EachProducer(func(p kadm.DescribedProducer) {
		if p.ProducerID == d.ProducerID && p.CurrentTxnStartOffset == -1 {
			seen++
		}
	})
	if seen == 0 {
		t.Fatalf("describe producers: %+v", producers)
	}
}

// TestTransactionsListOffsets: while a transaction is open, ListOffsets
// under read_committed answers the last stable offset for latest and, as
// Kafka, no offset for a timestamp whose record is at or past it; read
// uncommitted finds the open transaction's record, and read_committed does
// once it commits.
func TestTransactionsListOffsets(t *testing.T) {
	n := floetest.StartNode(t, node.Config{})
	ctx := context.Background()
	cl := newFranzClient(t, n.KafkaAddr())
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "txo"); err != nil {
		t.Fatal(err)
	}
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "txo", Value: []byte("before"), Timestamp: base}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	prod := newFranzClient(t, n.KafkaAddr(), kgo.TransactionalID("txo-app"), kgo.DefaultProduceTopic("txo"))
	if err := prod.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte("open"), Timestamp: base.Add(time.Minute)}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	list := func(isolation int8, timestamp int64) int64 {
		t.Helper()
		req := kmsg.NewPtrListOffsetsRequest()
		req.ReplicaID, req.IsolationLevel = -1, isolation
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = "txo"
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp = 0, timestamp
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		sp := resp.Topics[0].Partitions[0]
		if sp.ErrorCode != 0 {
			t.Fatalf("list offsets: error %d", sp.ErrorCode)
		}
		return sp.Offset
	}
	at := base.Add(30 * time.Second).UnixMilli() // after "before", at or before "open"
	for _, tc := range []struct {
		what      string
		isolation int8
		timestamp int64
		want      int64
	}{
		{"read_committed latest: the LSO", 1, -1, 1},
		{"read_uncommitted latest: the high watermark", 0, -1, 2},
		{"read_committed by timestamp: past the LSO", 1, at, -1},
		{"read_uncommitted by timestamp: the open record", 0, at, 1},
		{"read_committed max timestamp: past the LSO", 1, -3, -1},
		{"read_committed earliest", 1, -2, 0},
		{"read_committed earliest local", 1, -4, 0},
	} {
		if got := list(tc.isolation, tc.timestamp); got != tc.want {
			t.Errorf("%s: offset %d, want %d", tc.what, got, tc.want)
		}
	}
	if err := prod.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	if got := list(1, at); got != 1 {
		t.Errorf("read_committed by timestamp after the commit: offset %d, want 1", got)
	}
}

// TestTransactionsKV: on a kv-indexed topic written transactionally, /kv
// answers a transaction's value only once it commits, and never an
// aborted overwrite.
func TestTransactionsKV(t *testing.T) {
	n := kvNode(t, t.TempDir())
	ctx := context.Background()
	adm := kadm.NewClient(newFranzClient(t, n.KafkaAddr()))
	createKVTopic(t, adm, "tkv", 1)
	prod := newFranzClient(t, n.KafkaAddr(), kgo.TransactionalID("kv-writer"), kgo.DefaultProduceTopic("tkv"))
	write := func(value string, commit bool) {
		t.Helper()
		if err := prod.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		if err := prod.ProduceSync(ctx, &kgo.Record{Key: []byte("k"), Value: []byte(value)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		if value == "v3" {
			// Produced, not yet committed: not visible.
			if a := kvGet(t, n.HTTPAddr(), "/kv/tkv/k"); a.status != 200 || string(a.value) != "v1" {
				t.Fatalf("before the commit: %d %q, want v1", a.status, a.value)
			}
		}
		if err := prod.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatal(err)
		}
	}
	write("v1", true)
	if a := kvGet(t, n.HTTPAddr(), "/kv/tkv/k"); a.status != 200 || string(a.value) != "v1" {
		t.Fatalf("committed: %d %q", a.status, a.value)
	}
	write("v2", false)
	if a := kvGet(t, n.HTTPAddr(), "/kv/tkv/k"); a.status != 200 || string(a.value) != "v1" {
		t.Fatalf("after an aborted overwrite: %d %q, want v1", a.status, a.value)
	}
	write("v3", true)
	if a := kvGet(t, n.HTTPAddr(), "/kv/tkv/k"); a.status != 200 || string(a.value) != "v3" {
		t.Fatalf("after a committed overwrite: %d %q, want v3", a.status, a.value)
	}
}

// TestTransactionsViews: a read_committed consumer of a hierarchical view
// (through the posting index) sees only its key's committed records, and
// kcat (read_committed by default) too.
func TestTransactionsViews(t *testing.T) {
	n := floetest.StartNode(t, node.Config{})
	ctx := context.Background()
	adm := kadm.NewClient(newFranzClient(t, n.KafkaAddr()))
	if resp, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"hierarchical.enabled": ptr("true")}, "fleet"); err != nil || resp.Err != nil {
		t.Fatalf("create: %v %v", err, resp.Err)
	}
	prod := newFranzClient(t, n.KafkaAddr(), kgo.TransactionalID("fleet-writer"), kgo.DefaultProduceTopic("fleet"))
	txn := func(commit bool, recs ...string) {
		t.Helper()
		if err := prod.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for _, kv := range recs {
			k, v, _ := strings.Cut(kv, "=")
			if err := prod.ProduceSync(ctx, &kgo.Record{Key: []byte(k), Value: []byte(v)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		if err := prod.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatal(err)
		}
	}
	txn(true, "A=a1", "B=b1")
	txn(false, "A=a-aborted", "B=b-aborted")
	txn(true, "A=a2")
	got := consumeValues(t, n.KafkaAddr(), "fleet/A", 2, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if strings.Join(got, ",") != "a1,a2" {
		t.Fatalf("read_committed view fleet/A read %v", got)
	}
	out, _ := runKcat(t, 30*time.Second, "", "-b", n.KafkaAddr(), "-C", "-t", "fleet/A", "-o", "beginning", "-e", "-q")
	if out != "a1\na2\n" {
		t.Fatalf("kcat on fleet/A read %q", out)
	}
	if got := consumeValues(t, n.KafkaAddr(), "fleet/A", 3); strings.Join(got, ",") != "a1,a-aborted,a2" {
		t.Fatalf("read_uncommitted view fleet/A read %v", got)
	}
}

// TestTransactionsTiered: transactional data, its markers and its aborted
// transactions survive consolidation into segments on MinIO: once every
// batch left the WAL tier, read_committed still reads only the committed
// records and read_uncommitted all of them.
func TestTransactionsTiered(t *testing.T) {
	c := tierCluster(t, 1, time.Minute)
	ctx := context.Background()
	addr := c.Brokers[0].KafkaAddr
	adm := kadm.NewClient(newFranzClient(t, addr))
	if resp, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"local.retention.ms": ptr("100")}, "ttier"); err != nil || resp.Err != nil {
		t.Fatalf("create: %v %v", err, resp.Err)
	}
	prod := newFranzClient(t, addr, kgo.TransactionalID("tier-writer"), kgo.DefaultProduceTopic("ttier"))
	for i, commit := range []bool{true, false, true, false, true} {
		if err := prod.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for j := range 3 {
			if err := prod.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "t%d-%d", i, j)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		if err := prod.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatal(err)
		}
	}
	waitConsolidated(t, c, "ttier", 1, 60*time.Second)
	committed := consumeValues(t, addr, "ttier", 9, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if strings.Join(committed, ",") != "t0-0,t0-1,t0-2,t2-0,t2-1,t2-2,t4-0,t4-1,t4-2" {
		t.Fatalf("read_committed from segments: %v", committed)
	}
	if all := consumeValues(t, addr, "ttier", 15); len(all) != 15 {
		t.Fatalf("read_uncommitted from segments: %v", all)
	}
	out, _ := runKcat(t, 30*time.Second, "", "-b", addr, "-C", "-t", "ttier", "-o", "beginning", "-e", "-q")
	if strings.Count(out, "\n") != 9 || strings.Contains(out, "t1-") || strings.Contains(out, "t3-") {
		t.Fatalf("kcat from segments read %q", out)
	}
}
