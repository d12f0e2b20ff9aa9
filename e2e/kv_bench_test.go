package e2e

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// BenchmarkKVLookup has the shape of the published sidecar benchmark:
// 100,000 keys "k-%06d" with 256-byte random values over 2 partitions;
// 100 warm-up lookups, then 5,000 uniform-random sequential lookups over
// HTTP on loopback, nearest-rank p50/p90/p99; then lookups/s with 16
// concurrent clients. Run: go test -run '^$' -bench KVLookup -benchtime 1x ./e2e/
func BenchmarkKVLookup(b *testing.B) {
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
		v := make([]byte, 256)
		rand.Read(v)
		recs = append(recs, &kgo.Record{Key: fmt.Appendf(nil, "k-%06d", i), Value: v})
	}
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		b.Fatal(err)
	}
	cl.Close()

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
	}
}
