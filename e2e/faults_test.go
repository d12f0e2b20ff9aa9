package e2e

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/floe-io/floe/cache"
	"github.com/floe-io/floe/ingest"
	"github.com/floe-io/floe/internal/testkit/floetest"
	"github.com/floe-io/floe/node"
	"github.com/floe-io/floe/objectstore"
)

// TestObjectStoreFaultsDuringProduce injects PUT failures (clean and
// ambiguous), GET failures and latency while idempotent producers run.
// Clients see retriable errors or retry; afterwards every acknowledged
// record is read back exactly once, in order, with no gaps.
func TestObjectStoreFaultsDuringProduce(t *testing.T) {
	dataDir := t.TempDir()
	dir, err := objectstore.NewDir(filepath.Join(dataDir, "objects"))
	if err != nil {
		t.Fatal(err)
	}
	faulty := objectstore.NewFaulty(dir, objectstore.FaultOptions{
		Seed:             7,
		PutErrorRate:     0.4,
		AmbiguousPutRate: 0.2,
		GetErrorRate:     0.1,
		Latency:          time.Millisecond,
		LatencyJitter:    3 * time.Millisecond,
	})
	// Small objects and a small cache, so that there are many PUTs and the
	// reads miss the cache and GET through the faults too.
	n := floetest.StartNode(t, node.Config{
		DataDir: dataDir,
		Store:   faulty,
		Ingest:  ingest.Options{MaxBytes: 32 << 10, MaxPutRate: 1000},
		Cache:   cache.Options{ChunkBytes: 16 << 10, MaxBytes: 48 << 10},
	})
	adm := newAdmin(t, n.KafkaAddr())

	w := workload{topic: "faults", partitions: 4, records: 10_000, baseTime: recentBase()}
	if _, err := adm.CreateTopic(context.Background(), w.partitions, 1, nil, w.topic); err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.KafkaAddr()), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RecordRetries(1000), kgo.ProducerBatchMaxBytes(16<<10), kgo.RetryBackoffFn(func(int) time.Duration { return 5 * time.Millisecond }))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()

	// Every record must be acknowledged (the idempotent producer retries
	// through the injected failures).
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var (
		mu     sync.Mutex
		failed []error
	)
	for i := range w.records {
		cl.Produce(ctx, w.record(i), func(_ *kgo.Record, err error) {
			if err != nil {
				mu.Lock()
				failed = append(failed, err)
				mu.Unlock()
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatalf("flush: %v", err)
	}
	if len(failed) > 0 {
		t.Fatalf("%d records failed, first: %v", len(failed), failed[0])
	}
	// Reads fail too; consumers retry through them.
	w.consumeAndCheck(t, n.KafkaAddr())
	st := faulty.Stats()
	if st.PutErrors == 0 || st.AmbiguousPuts == 0 || st.GetErrors == 0 {
		t.Fatalf("too few faults were injected: %+v", st)
	}
	t.Logf("faults injected: %+v", st)
	faulty.Heal()
	w.consumeAndCheck(t, n.KafkaAddr())
}
