package loadtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/floe-io/floe/internal/testkit"
)

// startKfake runs an in-process fake Kafka cluster on 127.0.0.1, seeded
// with topics, and returns its seed address.
func startKfake(t *testing.T, partitions int32, topics ...string) string {
	t.Helper()
	opts := []kfake.Opt{kfake.NumBrokers(1)}
	if len(topics) > 0 {
		opts = append(opts, kfake.SeedTopics(partitions, topics...))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		t.Fatalf("kfake: %v", err)
	}
	t.Cleanup(c.Close)
	return c.ListenAddrs()[0]
}

func testConfig(broker string) Config {
	cfg := DefaultConfig()
	cfg.Brokers = []string{broker}
	cfg.Logger = testkit.Logger()
	cfg.Progress = 0
	cfg.DrainTimeout = 10 * time.Second
	return cfg
}

func runOK(t *testing.T, cfg Config) *Report {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rep, err := Run(ctx, cfg)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if testing.Verbose() {
		var b bytes.Buffer
		_ = rep.WriteText(&b)
		t.Logf("report:\n%s", b.String())
	}
	return rep
}

func checkLatency(t *testing.T, name string, l LatencyStats, wantCount int64) {
	t.Helper()
	if l.Count != wantCount {
		t.Errorf("%s latency count = %d, want %d", name, l.Count, wantCount)
	}
	if !(l.P50Ms <= l.P90Ms && l.P90Ms <= l.P99Ms && l.P99Ms <= l.P999Ms && l.P999Ms <= l.MaxMs) {
		t.Errorf("%s percentiles out of order: %+v", name, l)
	}
	if l.MaxMs <= 0 {
		t.Errorf("%s max latency = %v, want > 0", name, l.MaxMs)
	}
}

func TestRunProduceConsume(t *testing.T) {
	const n = 2000
	cfg := testConfig(startKfake(t, 4, "lt"))
	cfg.Topic = "lt"
	cfg.Records = n
	cfg.Duration = 0
	cfg.Consumers = 1
	cfg.RecordSize = 100
	var progress bytes.Buffer
	cfg.Progress = 20 * time.Millisecond
	cfg.ProgressTo = &progress // written only while Run runs; its lines are TestProgressLines's

	rep := runOK(t, cfg)

	if rep.Produce.Records != n || rep.Consume.Records != n {
		t.Fatalf("produced %d, consumed %d, want %d each", rep.Produce.Records, rep.Consume.Records, n)
	}
	if !rep.Consume.CaughtUp {
		t.Error("consumers did not catch up")
	}
	if rep.Produce.Bytes != n*100 || rep.Consume.Bytes != n*100 {
		t.Errorf("bytes produced %d consumed %d, want %d", rep.Produce.Bytes, rep.Consume.Bytes, n*100)
	}
	if rep.Produce.RecordsPerSec <= 0 || rep.Produce.MiBPerSec <= 0 || rep.Consume.RecordsPerSec <= 0 || rep.Consume.MiBPerSec <= 0 {
		t.Errorf("throughput not positive: produce %+v consume %+v", rep.Produce, rep.Consume)
	}
	checkLatency(t, "produce", rep.Produce.Latency, n)
	checkLatency(t, "end-to-end", rep.Consume.EndToEnd, n)
	if rep.ErrorsTotal != 0 || rep.Interrupted || rep.KV != nil || rep.ObjectStore != nil {
		t.Errorf("unexpected: errors %v interrupted %v kv %v objectstore %v", rep.Errors, rep.Interrupted, rep.KV, rep.ObjectStore)
	}
	if rep.Setup.Partitions != 4 || rep.Setup.ReaderSets != 1 {
		t.Errorf("setup = %+v", rep.Setup)
	}

	// JSON round trip.
	path := filepath.Join(t.TempDir(), "out.json")
	if err := rep.WriteJSON(path); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(*rep, back) {
		t.Errorf("JSON round trip differs:\n got %+v\nwant %+v", back, *rep)
	}
	for _, key := range []string{`"p999_ms"`, `"mib_per_s"`, `"end_to_end"`} {
		if !bytes.Contains(raw, []byte(key)) {
			t.Errorf("JSON lacks %s", key)
		}
	}

	var text bytes.Buffer
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"produce", "consume", "end-to-end", "p99.9", "errors: none"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text report lacks %q:\n%s", want, text.String())
		}
	}
}

// TestRunShareGroup reads with a share group of two consumers (kfake's
// share groups), started at the pre-run ends (AlterShareGroupOffsets) and
// from the start (share.auto.offset.reset=earliest): the consumers catch
// up with every record of the run, each received once.
func TestRunShareGroup(t *testing.T) {
	const n = 2000
	for _, fromStart := range []bool{false, true} {
		t.Run(fmt.Sprintf("from start %v", fromStart), func(t *testing.T) {
			cfg := testConfig(startKfake(t, 4, "lt"))
			cfg.Topic = "lt"
			cfg.Records = n
			cfg.Duration = 0
			cfg.Consumers = 2
			cfg.ShareGroup = "sg"
			cfg.RecordSize = 100
			cfg.FromStart = fromStart
			rep := runOK(t, cfg)
			if rep.Produce.Records != n || rep.Consume.Records != n {
				t.Fatalf("produced %d, consumed %d, want %d each", rep.Produce.Records, rep.Consume.Records, n)
			}
			if !rep.Consume.CaughtUp {
				t.Error("share consumers did not catch up")
			}
			if rep.Setup.ShareGroup != "sg" || rep.ErrorsTotal != 0 {
				t.Errorf("setup %+v, errors %v", rep.Setup, rep.Errors)
			}
		})
	}
}

// TestRunGroupsKVMetrics covers topic creation, keys, two consumer groups,
// kv lookups and the metrics scrape against stand-in HTTP servers.
func TestRunGroupsKVMetrics(t *testing.T) {
	const n = 1000
	var hits, misses atomic.Int64
	kv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var k int
		if _, err := fmt.Sscanf(r.URL.Path, "/kv/ltg/k-%d", &k); err != nil {
			http.Error(w, `{"error_code":1,"message":"bad path"}`, http.StatusBadRequest)
			return
		}
		if k%2 == 1 {
			misses.Add(1)
			http.NotFound(w, r)
			return
		}
		hits.Add(1)
		w.Write([]byte("value"))
	}))
	t.Cleanup(kv.Close)
	var scrapes atomic.Int64
	metrics := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := scrapes.Add(1) // counters grow by 20 PUTs and 40 GETs between scrapes
		fmt.Fprintf(w, "# TYPE floe_objectstore_requests_total counter\n"+
			"floe_objectstore_requests_total{op=\"put\",backend=\"dir\"} %d\n"+
			"floe_objectstore_requests_total{op=\"get\",backend=\"dir\"} %d\n"+
			"floe_objectstore_requests_total{op=\"delete\",backend=\"dir\"} 3\n", 20*i, 40*i)
	}))
	t.Cleanup(metrics.Close)

	cfg := testConfig(startKfake(t, 0))
	cfg.Topic = "ltg"
	cfg.CreateTopic = true
	cfg.Partitions = 3
	cfg.Records = n
	cfg.Duration = 0
	cfg.Rate = 4000 // ~250ms, so that lookups run alongside
	cfg.KeySpace = 100
	cfg.Compression = "zstd"
	cfg.Payload = "text"
	cfg.Consumers = 1
	cfg.Group = "g"
	cfg.ConsumerGroups = 2
	cfg.KVURL = kv.URL
	cfg.KVConcurrency = 2
	cfg.KVLookupsRate = 400
	cfg.MetricsURLs = []string{metrics.URL + "/metrics"}

	rep := runOK(t, cfg)

	if rep.Produce.Records != n || rep.Consume.Records != 2*n {
		t.Fatalf("produced %d, consumed %d, want %d and %d", rep.Produce.Records, rep.Consume.Records, n, 2*n)
	}
	if !rep.Consume.CaughtUp {
		t.Error("groups did not catch up")
	}
	checkLatency(t, "end-to-end", rep.Consume.EndToEnd, 2*n)
	if rep.Setup.Partitions != 3 || rep.Setup.ReaderSets != 2 {
		t.Errorf("setup = %+v", rep.Setup)
	}
	// The server may also count lookups that the stop canceled.
	if rep.KV == nil || rep.KV.Lookups == 0 || rep.KV.Hits == 0 || rep.KV.Misses == 0 ||
		rep.KV.Hits > hits.Load() || rep.KV.Misses > misses.Load() || rep.KV.Hits+rep.KV.Misses != rep.KV.Lookups {
		t.Fatalf("kv = %+v, server saw %d hits %d misses", rep.KV, hits.Load(), misses.Load())
	}
	checkLatency(t, "kv", rep.KV.Latency, rep.KV.Lookups)
	if rep.ErrorsTotal != 0 {
		t.Errorf("errors: %v", rep.Errors)
	}
	o := rep.ObjectStore
	if o == nil || o.Puts != 20 || o.Gets != 40 {
		t.Fatalf("object store = %+v, want 20 puts and 40 gets", o)
	}
	if want := 20 / (float64(rep.Produce.Bytes) / gib); o.PutsPerGiBProduced != want {
		t.Errorf("puts per GiB = %v, want %v", o.PutsPerGiBProduced, want)
	}
	if len(o.Series) != 1 || o.Series[0] != "floe_objectstore_requests_total" {
		t.Errorf("series = %v", o.Series)
	}
}

func TestRunDurationAndRate(t *testing.T) {
	cfg := testConfig(startKfake(t, 2, "lr"))
	cfg.Topic = "lr"
	cfg.Duration = 750 * time.Millisecond
	// A third of the run: under -race on 2 shared cores the producer's
	// first sends came over 100 ms after the load phase began, and a
	// 100 ms warmup then held no record.
	cfg.Warmup = 250 * time.Millisecond
	cfg.Rate = 200
	rep := runOK(t, cfg)
	// 200/s for 0.75s is 150 records; the bound below is loose because
	// the test machine's cores are shared.
	if got := rep.Produce.Records; got < 75 || got > 152 {
		t.Errorf("produced %d records at 200/s in 0.75s, want about 150", got)
	}
	if rep.Produce.MeasuredRecords >= rep.Produce.Records || rep.Produce.MeasuredRecords == 0 {
		t.Errorf("measured %d of %d: warmup not excluded", rep.Produce.MeasuredRecords, rep.Produce.Records)
	}
	if rep.Produce.Latency.Count != rep.Produce.MeasuredRecords {
		t.Errorf("latency count %d, measured %d", rep.Produce.Latency.Count, rep.Produce.MeasuredRecords)
	}
}

func TestRunInterrupted(t *testing.T) {
	cfg := testConfig(startKfake(t, 2, "li"))
	cfg.Topic = "li"
	cfg.Duration = time.Minute
	cfg.Consumers = 1
	cfg.DrainTimeout = 3 * time.Second
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	start := time.Now()
	rep, err := Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 8*time.Second {
		t.Errorf("stopping took %v", took)
	}
	if !rep.Interrupted || rep.Produce.Records == 0 {
		t.Errorf("interrupted %v, produced %d", rep.Interrupted, rep.Produce.Records)
	}
}

func TestRunMissingTopic(t *testing.T) {
	cfg := testConfig(startKfake(t, 0))
	cfg.Topic = "absent"
	cfg.Records = 10
	_, err := Run(context.Background(), cfg)
	if err == nil || !strings.Contains(err.Error(), "--create-topic") {
		t.Fatalf("err = %v, want a hint at --create-topic", err)
	}
}
