package e2e

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/floe-io/floe/internal/testkit"
	"github.com/floe-io/floe/internal/testkit/floetest"
)

// BenchmarkFetchCatchUp measures a consumer catching up from offset 0 on a
// 64-partition topic on MinIO through a fresh broker (an empty chunk
// cache): wall time, MiB/s, the broker's object-store GETs and the
// coordinator's batch lookups. The data (FLOE_BENCH_FETCH_MIB, default 128
// MiB of 1 KiB incompressible records, round-robin over the partitions) is
// produced once through a broker that rolls WAL objects at
// FLOE_BENCH_FETCH_OBJECT_KIB (default 4096), from batches of at most
// FLOE_BENCH_FETCH_BATCH_KIB (default 64; a produce request, which ingest
// never splits, holds a batch per partition), so that every object holds
// every partition; that broker then stops, and each round starts a new
// broker process, consumes everything with franz-go's default fetch sizes
// (50 MiB per fetch, 1 MiB per partition), and stops it.
//
// With FLOE_BENCH_BASELINE_BROKER set to another build's broker binary
// (the commit before concurrent fetches, say), each round runs it and this
// module's broker one after the other, in alternating order, against the
// same cluster, and both are reported:
//
//	git archive 7f46fec | tar -x -C /tmp/floe-base && (cd /tmp/floe-base && go build -o /tmp/broker-base ./cmd/broker)
//	FLOE_BENCH_BASELINE_BROKER=/tmp/broker-base FLOE_MINIO_BIN=... \
//	  go test -run '^$' -bench FetchCatchUp -benchtime 1x ./e2e/
//
// FLOE_BENCH_FETCH_ROUNDS (default 3) sets the rounds. With
// FLOE_BENCH_FETCH_S3_LATENCY (a duration, e.g. 20ms) the consuming
// brokers reach MinIO through a proxy that holds every GET that long
// before forwarding it, as S3's time to first byte would. Besides the
// consumer's wall time, the broker's own Fetch service time (the sum over
// its Fetch requests) is reported, apart from the client's decoding. Run
// with -benchtime 1x: the setup is in the benchmark body.
func BenchmarkFetchCatchUp(b *testing.B) {
	const (
		topic      = "catchup"
		partitions = 64
		valueLen   = 1 << 10
	)
	totalMiB := benchEnvInt(b, "FLOE_BENCH_FETCH_MIB", 128)
	objectKiB := benchEnvInt(b, "FLOE_BENCH_FETCH_OBJECT_KIB", 4<<10)
	batchKiB := benchEnvInt(b, "FLOE_BENCH_FETCH_BATCH_KIB", 64)
	rounds := benchEnvInt(b, "FLOE_BENCH_FETCH_ROUNDS", 3)
	var latency time.Duration
	if s := os.Getenv("FLOE_BENCH_FETCH_S3_LATENCY"); s != "" {
		var err error
		if latency, err = time.ParseDuration(s); err != nil {
			b.Fatalf("FLOE_BENCH_FETCH_S3_LATENCY=%q: %v", s, err)
		}
	}
	records := totalMiB << 20 / valueLen

	c := floetest.RunCluster(b, 0)
	writer := c.AddBroker(1, "--ingest-max-bytes", strconv.Itoa(objectKiB<<10))
	adm := newAdmin(b, writer.KafkaAddr)
	ctx := context.Background()
	if _, err := adm.CreateTopic(ctx, partitions, -1, nil, topic); err != nil {
		b.Fatal(err)
	}
	produceStart := time.Now()
	produceCatchUp(b, writer.KafkaAddr, topic, partitions, records, valueLen, batchKiB<<10)
	// Round by round to stdout: the testing package keeps only ten lines
	// of a benchmark's log.
	objects, _, err := coordObjects(c.Coord.HTTPAddr)
	if err != nil {
		b.Fatal(err)
	}
	fmt.Printf("produced %d MiB (%d records of %d B) over %d partitions in %s: %d WAL objects (rolled at %d KiB)\n",
		totalMiB, records, valueLen, partitions, time.Since(produceStart).Round(time.Millisecond), objects, objectKiB)
	writer.Stop()
	endpoint := ""
	if latency > 0 {
		endpoint = startLatencyProxy(b, c.MinIO.Endpoint, latency)
		fmt.Printf("consuming brokers reach MinIO through a proxy holding each GET %s\n", latency)
	}

	type variant struct {
		name, bin string
		runs      []catchUp
	}
	variants := []*variant{{name: "this", bin: floetest.Binary(b, "broker")}}
	if base := os.Getenv("FLOE_BENCH_BASELINE_BROKER"); base != "" {
		variants = append(variants, &variant{name: "baseline", bin: base})
	}
	nextID := 10
	b.ResetTimer()
	for round := range rounds {
		order := slices.Clone(variants)
		if round%2 == 1 {
			slices.Reverse(order)
		}
		for _, v := range order {
			nextID++
			r := runCatchUp(b, c, v.bin, endpoint, int32(nextID), topic, records)
			r.mib = float64(totalMiB)
			v.runs = append(v.runs, r)
			fmt.Printf("round %d %-8s %s\n", round, v.name, r)
		}
	}
	b.StopTimer()
	for _, v := range variants {
		var wall time.Duration
		var serve time.Duration
		var gets, lookups, fetches float64
		for _, r := range v.runs {
			wall += r.wall
			serve += r.serve
			gets += r.gets
			lookups += r.lookups
			fetches += float64(r.fetches)
		}
		n := float64(len(v.runs))
		mean := wall / time.Duration(len(v.runs))
		meanServe := serve / time.Duration(len(v.runs))
		b.Logf("%-8s mean of %d: %s, %.1f MiB/s (broker Fetch time %s), %.0f GETs, %.0f coordinator lookups, %.0f fetches",
			v.name, len(v.runs), mean.Round(time.Millisecond), float64(totalMiB)/mean.Seconds(), meanServe.Round(time.Millisecond),
			gets/n, lookups/n, fetches/n)
		b.ReportMetric(mean.Seconds(), v.name+"-wall-s")
		b.ReportMetric(meanServe.Seconds(), v.name+"-fetch-s")
		b.ReportMetric(float64(totalMiB)/mean.Seconds(), v.name+"-MiB/s")
		b.ReportMetric(gets/n, v.name+"-GETs")
		b.ReportMetric(lookups/n, v.name+"-lookups")
	}
}

// catchUp is one consumer's catch-up through a fresh broker.
type catchUp struct {
	mib     float64 // consumed
	wall    time.Duration
	serve   time.Duration // the broker's Fetch service time, summed
	gets    float64       // the broker's object-store GETs
	lookups float64       // the coordinator's find_batches and find_batches_multi requests
	fetches int64         // Fetch requests the consumer sent
}

func (r catchUp) String() string {
	return fmt.Sprintf("%8s %7.1f MiB/s (broker Fetch time %8s), %5.0f GETs, %5.0f coordinator lookups, %4d fetches",
		r.wall.Round(time.Millisecond), r.mib/r.wall.Seconds(), r.serve.Round(time.Millisecond), r.gets, r.lookups, r.fetches)
}

// runCatchUp starts broker bin as node id (on s3Endpoint, "" for MinIO's),
// waits until it is the only broker Metadata names, consumes every record
// of topic from offset 0 through it, and stops it.
func runCatchUp(b *testing.B, c *floetest.Cluster, bin, s3Endpoint string, id int32, topic string, records int) catchUp {
	b.Helper()
	p := c.AddBrokerBinary(bin, int(id), s3Endpoint)
	defer p.Stop()
	testkit.CheckFor(b, 30*time.Second, 50*time.Millisecond, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		ids, _, err := metadataBrokers(ctx, p.KafkaAddr, "")
		if err == nil && !slices.Equal(ids, []int32{id}) {
			err = fmt.Errorf("metadata names brokers %v, want only %d", ids, id)
		}
		return err
	})
	lookupsBefore := coordinatorLookups(b, c)
	var fetches atomic.Int64
	cl := pinnedClient(b, p.KafkaAddr,
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.WithHooks(fetchCounter{&fetches}))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	start := time.Now()
	got := 0
	for got < records {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			b.Fatalf("consumed %d of %d records: %v", got, records, err)
		}
		fs.EachError(func(t string, p int32, err error) { b.Fatalf("fetch %s/%d: %v", t, p, err) })
		got += fs.NumRecords()
	}
	wall := time.Since(start)
	cl.Close()
	gets, err := floetest.Metric(p.HTTPAddr, "floe_objectstore_requests_total", `op="get"`)
	if err != nil {
		b.Fatal(err)
	}
	serve, err := floetest.Metric(p.HTTPAddr, "floe_kafka_request_duration_seconds_sum", `api="Fetch"`)
	if err != nil {
		b.Fatal(err)
	}
	return catchUp{wall: wall, serve: time.Duration(serve * float64(time.Second)), gets: gets,
		lookups: coordinatorLookups(b, c) - lookupsBefore, fetches: fetches.Load()}
}

// fetchCounter counts the Fetch requests a client writes.
type fetchCounter struct{ n *atomic.Int64 }

func (h fetchCounter) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if key == 1 && err == nil {
		h.n.Add(1)
	}
}

// coordinatorLookups is how many batch-coordinate requests the cluster's
// coordinator has served, single and batched.
func coordinatorLookups(b *testing.B, c *floetest.Cluster) float64 {
	b.Helper()
	var n float64
	for _, op := range []string{"find_batches", "find_batches_multi"} {
		v, err := floetest.Metric(c.Coord.HTTPAddr, "floe_coordinator_rpc_duration_seconds_count", `op="`+op+`"`)
		if err == nil {
			n += v
		}
	}
	return n
}

// produceCatchUp produces records of valueLen random bytes to topic,
// record i to partition i % partitions, uncompressed, in batches of at
// most batchBytes.
func produceCatchUp(b *testing.B, addr, topic string, partitions, records, valueLen, batchBytes int) {
	b.Helper()
	produceRandom(b, addr, topic, records, valueLen, batchBytes, 0, func(i int, v []byte) *kgo.Record {
		return &kgo.Record{Partition: int32(i % partitions), Value: v}
	})
}

// produceRandom produces records records of valueLen random bytes to topic
// through addr (rec makes the i-th around its value), uncompressed in
// batches of at most batchBytes, and fails b on the first error. maxBuffered
// bounds the bytes the client holds (0: franz-go's default).
func produceRandom(b *testing.B, addr, topic string, records, valueLen, batchBytes, maxBuffered int, rec func(i int, value []byte) *kgo.Record) {
	b.Helper()
	opts := []kgo.Opt{kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchCompression(kgo.NoCompression()),
		// Small batches keep produce requests (which ingest does not split
		// across objects) below the objects' size.
		kgo.ProducerBatchMaxBytes(int32(batchBytes))}
	if maxBuffered > 0 {
		opts = append(opts, kgo.MaxBufferedBytes(maxBuffered))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	var (
		wg    sync.WaitGroup
		errMu sync.Mutex
		first error
	)
	for i := range records {
		v := make([]byte, valueLen)
		rand.Read(v)
		wg.Add(1)
		cl.Produce(context.Background(), rec(i, v), func(_ *kgo.Record, err error) {
			defer wg.Done()
			if err != nil {
				errMu.Lock()
				if first == nil {
					first = err
				}
				errMu.Unlock()
			}
		})
	}
	wg.Wait()
	if first != nil {
		b.Fatalf("produce: %v", first)
	}
}

// startLatencyProxy serves MinIO's S3 API on a local address (returned as
// an endpoint URL), holding every GET for latency before forwarding it:
// S3's time to first byte, which a local MinIO does not have.
func startLatencyProxy(b *testing.B, endpoint string, latency time.Duration) string {
	b.Helper()
	target, err := url.Parse(endpoint)
	if err != nil {
		b.Fatal(err)
	}
	transport := &http.Transport{MaxIdleConnsPerHost: 256}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.Transport = roundTripFunc(func(req *http.Request) (*http.Response, error) {
		if req.Method == http.MethodGet {
			select {
			case <-time.After(latency):
			case <-req.Context().Done():
				return nil, req.Context().Err()
			}
		}
		return transport.RoundTrip(req)
	})
	srv := httptest.NewServer(rp)
	b.Cleanup(srv.Close)
	return srv.URL
}

// benchEnvInt reads a positive integer setting from the environment.
func benchEnvInt(b *testing.B, name string, def int) int {
	b.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		b.Fatalf("%s=%q: want a positive integer", name, s)
	}
	return n
}
