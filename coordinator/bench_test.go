package coordinator

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/floe-io/floe/coordapi"
)

// BenchmarkCommitObject1600x600 commits objects of 1,600 idempotent batches
// spread over 600 partitions (6 topics × 100), the shape of a full 8 MiB
// object under load, and reports commit latency percentiles.
func BenchmarkCommitObject1600x600(b *testing.B) {
	const (
		topics, partsPerTopic = 6, 100
		batches               = 1600
		producers             = 100
		batchBytes            = 5000
	)
	e := newEnv(b)
	var ids []coordapi.TopicID
	for i := 0; i < topics; i++ {
		ids = append(ids, e.topic(fmt.Sprintf("bench-%d", i), partsPerTopic, nil).ID)
	}
	type prodPart struct {
		pid  int64
		part int
	}
	nextSeq := map[prodPart]int32{}
	ctx := context.Background()
	lat := make([]time.Duration, 0, b.N)

	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		req := &coordapi.CommitRequest{ObjectKey: fmt.Sprintf("wal/%08d", i), ObjectSize: batches * batchBytes, BrokerID: 1,
			Batches: make([]coordapi.CommitBatch, batches)}
		for j := range req.Batches {
			part := (i*batches + j) % (topics * partsPerTopic)
			pid := int64(part % producers)
			k := prodPart{pid, part}
			req.Batches[j] = coordapi.CommitBatch{
				TopicID: ids[part/partsPerTopic], Partition: int32(part % partsPerTopic),
				ByteOffset: int64(j * batchBytes), ByteLength: batchBytes,
				LastOffsetDelta: 9, MaxTimestamp: int64(i),
				ProducerID: pid, ProducerEpoch: 0, BaseSequence: nextSeq[k],
			}
			nextSeq[k] += 10
		}
		start := time.Now()
		resp, err := e.c.CommitObject(ctx, req)
		lat = append(lat, time.Since(start))
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range resp.Results {
			if r.ErrorCode != 0 {
				b.Fatalf("error code %d", r.ErrorCode)
			}
		}
	}
	b.StopTimer()
	reportPercentiles(b, lat)
	b.ReportMetric(float64(batches*b.N)/b.Elapsed().Seconds(), "batches/s")
}

// BenchmarkFindBatches looks up random offsets in a partition of 100,000
// batches (16 KiB each) with a 1 MiB fetch budget.
func BenchmarkFindBatches(b *testing.B) {
	const (
		objects, perObject = 100, 1000
		batchBytes         = 16 << 10
	)
	e := newEnv(b)
	tp := e.topic("bench", 1, nil)
	ctx := context.Background()
	for o := 0; o < objects; o++ {
		req := &coordapi.CommitRequest{ObjectKey: fmt.Sprintf("wal/%08d", o), ObjectSize: perObject * batchBytes, Batches: make([]coordapi.CommitBatch, perObject)}
		for j := range req.Batches {
			req.Batches[j] = coordapi.CommitBatch{TopicID: tp.ID, ByteOffset: int64(j * batchBytes), ByteLength: batchBytes,
				LastOffsetDelta: 9, ProducerID: -1}
		}
		if _, err := e.c.CommitObject(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
	hwm := int64(objects * perObject * 10)
	rng := rand.New(rand.NewPCG(1, 2))
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		resp, err := e.c.FindBatches(ctx, coordapi.FindBatchesRequest{TopicID: tp.ID, Offset: rng.Int64N(hwm), MaxBytes: 1 << 20})
		lat = append(lat, time.Since(start))
		if err != nil || len(resp.Batches) == 0 {
			b.Fatal(err, len(resp.Batches))
		}
	}
	b.StopTimer()
	reportPercentiles(b, lat)
}

func reportPercentiles(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	pct := func(p float64) float64 {
		return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Microseconds()) / 1000
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
}
