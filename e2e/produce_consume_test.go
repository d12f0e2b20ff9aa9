package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/floe-io/floe/internal/testkit/floetest"
	"github.com/floe-io/floe/internal/testkit/miniotest"
)

// codecs are the producer compressions every test round covers.
var codecs = []struct {
	name  string
	codec kgo.CompressionCodec
}{
	{"none", kgo.NoCompression()},
	{"gzip", kgo.GzipCompression()},
	{"snappy", kgo.SnappyCompression()},
	{"lz4", kgo.Lz4Compression()},
	{"zstd", kgo.ZstdCompression()},
}

// TestProduceConsumeRestartDir is the foundation's end-to-end check on the
// embedded default (local-directory object store): 100,000 idempotent
// records per codec over 8 partitions, read back intact, then read back
// again by a new broker process on the same data.
func TestProduceConsumeRestartDir(t *testing.T) {
	dataDir := t.TempDir()
	testProduceConsumeRestart(t, nil, "--data-dir", dataDir)
}

// TestProduceConsumeRestartMinIO is the same check with objects in a real
// MinIO server.
func TestProduceConsumeRestartMinIO(t *testing.T) {
	m := miniotest.Start(t)
	env := []string{"AWS_ACCESS_KEY_ID=" + m.AccessKey, "AWS_SECRET_ACCESS_KEY=" + m.SecretKey}
	testProduceConsumeRestart(t, env, "--data-dir", t.TempDir(), "--s3-bucket", m.Bucket,
		"--s3-endpoint", m.Endpoint, "--s3-region", m.Region, "--s3-path-style")
}

func testProduceConsumeRestart(t *testing.T, env []string, args ...string) {
	records := 100_000
	if testing.Short() {
		records = 10_000
	}
	p := floetest.StartBroker(t, env, args...)
	adm := newAdmin(t, p.KafkaAddr)

	var loads []workload
	for _, c := range codecs {
		w := workload{topic: "e2e-" + c.name, partitions: 8, records: records, baseTime: recentBase()}
		if _, err := adm.CreateTopic(context.Background(), w.partitions, 1, nil, w.topic); err != nil {
			t.Fatalf("create topic %s: %v", w.topic, err)
		}
		cl, err := kgo.NewClient(kgo.SeedBrokers(p.KafkaAddr), kgo.ProducerBatchCompression(c.codec),
			kgo.RecordPartitioner(kgo.ManualPartitioner()))
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		w.produce(t, cl)
		cl.Close()
		produced := time.Now()
		w.consumeAndCheck(t, p.KafkaAddr)
		consumed := time.Now()
		w.checkListOffsets(t, adm)
		t.Logf("%s: produced %d records in %s, consumed in %s, list offsets in %s", c.name, w.records,
			produced.Sub(start), consumed.Sub(produced), time.Since(consumed))
		loads = append(loads, w)
	}

	// A new broker process on the same data and object store serves it all.
	p.Stop()
	p2 := floetest.StartBroker(t, env, args...)
	adm2 := newAdmin(t, p2.KafkaAddr)
	for _, w := range loads {
		w.consumeAndCheck(t, p2.KafkaAddr)
		w.checkListOffsets(t, adm2)
	}
}

func newAdmin(t testing.TB, seeds string) *kadm.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds))
	if err != nil {
		t.Fatal(fmt.Errorf("admin client: %w", err))
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}
