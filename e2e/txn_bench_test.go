package e2e

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/floe-io/floe/internal/testkit/floetest"
	"github.com/floe-io/floe/internal/testkit/miniotest"
)

// BenchmarkTransactions measures transactions on a broker process, on the
// embedded default's local directory and on MinIO: the commit latency
// (EndTxn, from its request to its answer, once the markers are durable in
// every partition of the transaction) at p50 and p99, and the throughput of
// one transactional producer making transactions of 100 ms flat out,
// against one idempotent producer flat out in the same run. 1 KiB records,
// 4 partitions.
//
//	go test -run '^$' -bench BenchmarkTransactions -benchtime 1x ./e2e/
//
// FLOE_BENCH_TXN_SECONDS sets each phase's length (default 10);
// FLOE_BENCH_TXN_BROKER_ARGS adds broker flags (e.g. "--ingest-linger 50ms").
func BenchmarkTransactions(b *testing.B) {
	secs := 10
	if s, err := strconv.Atoi(os.Getenv("FLOE_BENCH_TXN_SECONDS")); err == nil && s > 0 {
		secs = s
	}
	for _, store := range []string{"dir", "minio"} {
		b.Run(store, func(b *testing.B) {
			args := []string{"--data-dir", b.TempDir()}
			var env []string
			if store == "minio" {
				m := miniotest.Start(b)
				env = []string{"AWS_ACCESS_KEY_ID=" + m.AccessKey, "AWS_SECRET_ACCESS_KEY=" + m.SecretKey}
				args = append(args, "--s3-bucket", m.Bucket, "--s3-endpoint", m.Endpoint, "--s3-region", m.Region, "--s3-path-style")
			}
			args = append(args, strings.Fields(os.Getenv("FLOE_BENCH_TXN_BROKER_ARGS"))...)
			p := floetest.StartBroker(b, env, args...)
			adm := newAdmin(b, p.KafkaAddr)
			for _, topic := range []string{"plain", "txn"} {
				if _, err := adm.CreateTopic(context.Background(), 4, 1, nil, topic); err != nil {
					b.Fatal(err)
				}
			}
			for range b.N {
				plain := produceFor(b, p.KafkaAddr, "plain", "", time.Duration(secs)*time.Second, 0)
				txn := produceFor(b, p.KafkaAddr, "txn", "bench-txn", time.Duration(secs)*time.Second, 100*time.Millisecond)
				p50, p99 := txn.percentile(0.50), txn.percentile(0.99)
				ratio := txn.rate / plain.rate
				b.ReportMetric(plain.rate, "plain_records/s")
				b.ReportMetric(txn.rate, "txn_records/s")
				b.ReportMetric(ratio, "txn/plain")
				b.ReportMetric(float64(p50.Microseconds())/1000, "endtxn_p50_ms")
				b.ReportMetric(float64(p99.Microseconds())/1000, "endtxn_p99_ms")
				b.Logf("%s: idempotent %.0f records/s; transactional (100 ms transactions, %d of them) %.0f records/s = %.2fx; EndTxn p50 %s, p99 %s",
					store, plain.rate, len(txn.ends), txn.rate, ratio, p50, p99)
			}
		})
	}
}

// producedFor is what produceFor measured.
type producedFor struct {
	rate float64         // records per second, each flushed (acknowledged)
	ends []time.Duration // each EndTxn's latency
}

func (p producedFor) percentile(q float64) time.Duration {
	if len(p.ends) == 0 {
		return 0
	}
	s := slices.Clone(p.ends)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

// produceFor produces 1 KiB records to topic flat out for d: with a
// transactional id, in transactions of txnEvery (each flushed, then ended
// with a timed EndTxn); without, idempotently.
func produceFor(b *testing.B, addr, topic, txnID string, d, txnEvery time.Duration) producedFor {
	b.Helper()
	opts := []kgo.Opt{kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(5 * time.Millisecond), kgo.MaxBufferedRecords(20000),
		kgo.ProducerBatchCompression(kgo.NoCompression())}
	if txnID != "" {
		opts = append(opts, kgo.TransactionalID(txnID))
	}
	cl := newFranzClient(b, addr, opts...)
	ctx := context.Background()
	value := make([]byte, 1024)
	rand.Read(value) // incompressible either way
	var out producedFor
	start := time.Now()
	var produced int64
	for time.Since(start) < d {
		if txnID != "" {
			if err := cl.BeginTransaction(); err != nil {
				b.Fatal(err)
			}
		}
		until := time.Now().Add(txnEvery)
		if txnID == "" {
			until = start.Add(d)
		}
		for time.Now().Before(until) {
			cl.Produce(ctx, &kgo.Record{Key: []byte(fmt.Sprint(produced % 64)), Value: value}, nil)
			produced++
		}
		if err := cl.Flush(ctx); err != nil {
			b.Fatal(err)
		}
		if txnID != "" {
			t0 := time.Now()
			if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
				b.Fatal(err)
			}
			out.ends = append(out.ends, time.Since(t0))
		}
	}
	out.rate = float64(produced) / time.Since(start).Seconds()
	return out
}
