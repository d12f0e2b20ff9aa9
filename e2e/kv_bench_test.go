package e2e

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/record"
)

// BenchmarkKVLookup has the shape of the published sidecar benchmark:
// 100,000 keys "k-%06d" with 256-byte values over 2 partitions, produced
// with franz-go's defaults (snappy, linger 10ms, batches up to 1 MB); 100
// warm-up lookups, then 5,000 uniform-random sequential lookups over HTTP
// on loopback, nearest-rank p50/p90/p99; then lookups/s with 16 concurrent
// clients. Two cases:
//
//   - values=random: random bytes. Snappy does not shrink them, so franz-go
//     sends the batches uncompressed (the sidecar's own shape).
//   - values=text: words, as JSON or log lines compress: the batches are
//     stored snappy-compressed, thousands of records each, and a lookup
//     must decompress (or find cached) the batch holding its record.
//
// Run: go test -run '^$' -bench KVLookup -benchtime 1x ./e2e/
func BenchmarkKVLookup(b *testing.B) {
	for _, c := range []struct {
		name  string
		value func(i int) []byte
		codec record.Codec
	}{
		{"values=random", randomValue, record.CodecNone},
		{"values=text", textValue, record.CodecSnappy},
	} {
		b.Run(c.name, func(b *testing.B) { benchKVLookup(b, c.value, c.codec) })
	}
}

// randomValue returns 256 random bytes.
func randomValue(int) []byte {
	v := make([]byte, 256)
	rand.Read(v)
	return v
}

// benchWords are what textValue draws from.
var benchWords = strings.Fields("the quick brown fox jumps over lazy dog floe broker object store " +
	"partition offset record batch consumer producer latency throughput cache chunk")

// textValue returns 256 bytes of words, different for each i.
func textValue(i int) []byte {
	r := mrand.New(mrand.NewPCG(uint64(i), 3))
	v := fmt.Appendf(make([]byte, 0, 300), `{"id":%d,"text":"`, i)
	for len(v) < 256 {
		v = append(v, benchWords[r.IntN(len(benchWords))]...)
		v = append(v, ' ')
	}
	return v[:256]
}

func benchKVLookup(b *testing.B, value func(int) []byte, wantCodec record.Codec) {
	const keys = 100_000
	n := kvNode(b, b.TempDir())
	adm := newAdmin(b, n.KafkaAddr())
	createKVTopic(b, adm, "bench", 2)
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.KafkaAddr()), kgo.DefaultProduceTopic("bench"))
	if err != nil {
		b.Fatal(err)
	}
	recs := make([]*kgo.Record, 0, keys)
	for i := range keys {
		recs = append(recs, &kgo.Record{Key: fmt.Appendf(nil, "k-%06d", i), Value: value(i)})
	}
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		b.Fatal(err)
	}
	cl.Close()
	perBatch := checkBenchBatches(b, n.Coordinator(), n.Store(), wantCodec)

	httpc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	base := "http://" + n.HTTPAddr() + "/kv/bench/"
	lookup := func(i int) time.Duration {
		start := time.Now()
		resp, err := httpc.Get(fmt.Sprintf("%sk-%06d", base, i))
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatalf("k-%06d: %d", i, resp.StatusCode)
		}
		return time.Since(start)
	}
	rng := mrand.New(mrand.NewPCG(1, 1))
	b.ResetTimer()
	for range b.N {
		for range 100 {
			lookup(rng.IntN(keys))
		}
		lat := make([]time.Duration, 5000)
		for i := range lat {
			lat[i] = lookup(rng.IntN(keys))
		}
		slices.Sort(lat)
		rank := func(p float64) time.Duration { return lat[int(p*float64(len(lat))+0.999999)-1] }
		b.ReportMetric(float64(rank(0.50).Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(rank(0.90).Microseconds())/1000, "p90-ms")
		b.ReportMetric(float64(rank(0.99).Microseconds())/1000, "p99-ms")

		const clients, perClient = 16, 2000
		var wg sync.WaitGroup
		start := time.Now()
		for c := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := mrand.New(mrand.NewPCG(uint64(c), 7))
				for range perClient {
					lookup(r.IntN(keys))
				}
			}()
		}
		wg.Wait()
		b.ReportMetric(clients*perClient/time.Since(start).Seconds(), "lookups/s@16")
		b.ReportMetric(perBatch, "records/batch")
	}
}

// batchReader is what checkBenchBatches reads stored batches with.
type batchReader interface {
	GetRange(ctx context.Context, key string, offset, length int64) ([]byte, error)
}

// checkBenchBatches checks that partition 0 of topic "bench" holds batches
// of codec, so that each case measures what it says, and returns their
// mean record count.
func checkBenchBatches(b *testing.B, c coordapi.Coordinator, store batchReader, codec record.Codec) float64 {
	ctx := context.Background()
	t, err := c.Topic(ctx, "bench")
	if err != nil {
		b.Fatal(err)
	}
	found, err := c.FindBatches(ctx, coordapi.FindBatchesRequest{TopicID: t.ID, Offset: 0, MaxBytes: 64 << 20})
	if err != nil || len(found.Batches) == 0 {
		b.Fatalf("find batches: %v (%d batches)", err, len(found.Batches))
	}
	bc := found.Batches[0]
	data, err := store.GetRange(ctx, bc.ObjectKey, bc.ByteOffset, int64(bc.ByteLength))
	if err != nil {
		b.Fatal(err)
	}
	h, err := record.ParseHeader(data)
	if err != nil {
		b.Fatal(err)
	}
	if h.Codec() != codec {
		b.Fatalf("batches are %v, want %v", h.Codec(), codec)
	}
	return float64(found.HighWatermark) / float64(len(found.Batches))
}
