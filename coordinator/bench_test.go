package coordinator

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/cockroachdb/pebble"

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

// nosyncLog is a Log that applies each batch without a sync, as package
// ha's leader does (the stream, not Pebble, is the durable copy): what is
// left of a commit is the coordinator's own CPU.
type nosyncLog struct{}

func (nosyncLog) Commit(b *pebble.Batch) error { return b.Commit(pebble.NoSync) }

func (nosyncLog) Start(b *pebble.Batch) (func() error, error) { return noWait, b.Commit(pebble.NoSync) }

// BenchmarkCommitFleet commits objects of 50 batches on partitions drawn
// uniformly from 100,000 (100 topics of 1,000), not idempotent, behind a
// log that does not sync: the fleet simulator's shape at issue 39's knee
// (scripts/fleet-sim.sh with BATCHES=50 PARTITIONS=100000), without NATS.
// ns/op is the leader's CPU a commit, single-threaded.
func BenchmarkCommitFleet(b *testing.B) {
	const (
		topics, partsPerTopic = 100, 1000
		batches               = 50
		batchBytes            = 16 << 10
	)
	e := newEnv(b, func(o *Options) { o.Log, o.TierInterval, o.TxnCheckInterval = nosyncLog{}, -1, -1 })
	ids := make([]coordapi.TopicID, topics)
	for i := range ids {
		ids[i] = e.topic(fmt.Sprintf("fleet-%03d", i), partsPerTopic, nil).ID
	}
	rng := rand.New(rand.NewPCG(1, 2))
	reqs := make([]*coordapi.CommitRequest, 4096)
	for i := range reqs {
		req := &coordapi.CommitRequest{ObjectSize: batches * batchBytes, BrokerID: int32(i % 256),
			Batches: make([]coordapi.CommitBatch, batches)}
		seen := map[int]bool{}
		for j := range req.Batches {
			p := rng.IntN(topics * partsPerTopic)
			for seen[p] {
				p = rng.IntN(topics * partsPerTopic)
			}
			seen[p] = true
			req.Batches[j] = plain(ids[p/partsPerTopic], int32(p%partsPerTopic), 9)
			req.Batches[j].ByteOffset, req.Batches[j].ByteLength = int64(j*batchBytes), batchBytes
		}
		reqs[i] = req
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		req := reqs[i%len(reqs)]
		req.ObjectKey = fmt.Sprintf("wal/%010d", i)
		if _, err := e.c.CommitObject(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(batches*b.N)/b.Elapsed().Seconds(), "coords/s")
}
