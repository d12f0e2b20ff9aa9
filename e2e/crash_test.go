package e2e

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/internal/testkit"
	"github.com/floe-io/floe/internal/testkit/floetest"
	"github.com/floe-io/floe/internal/testkit/miniotest"
	"github.com/floe-io/floe/record"
)

// The crash tests of issue 3, point 6: real broker and coordinator
// processes killed with SIGKILL under a produce load, then every record
// read back and compared with what the producers were told.

// holdingProxy forwards a broker's S3 requests to MinIO. Once armed, it
// lets the next WAL object upload complete at MinIO but holds back its
// answer: the broker then has an object in the bucket that it cannot have
// committed, and killing it leaves that object an orphan.
type holdingProxy struct {
	srv     *httptest.Server
	armed   atomic.Bool
	held    chan string // the key of the upload whose answer is held
	release chan struct{}
}

// startHoldingProxy starts a holdingProxy in front of minio on 127.0.0.1;
// point a broker's --s3-endpoint at hp.srv.URL.
func startHoldingProxy(t *testing.T, minio *miniotest.Server) *holdingProxy {
	t.Helper()
	target, err := url.Parse(minio.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	hp := &holdingProxy{held: make(chan string, 1), release: make(chan struct{})}
	// The Host header stays the proxy's, which the broker signed.
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.ErrorLog = log.New(io.Discard, "", 0) // the killed broker's requests fail
	rp.Transport = roundTripFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := http.DefaultTransport.RoundTrip(req)
		key, isObject := strings.CutPrefix(req.URL.Path, "/"+minio.Bucket+"/")
		if err != nil || req.Method != http.MethodPut || !isObject || !strings.HasPrefix(key, "wal/") ||
			resp.StatusCode != http.StatusOK || !hp.armed.CompareAndSwap(true, false) {
			return resp, err
		}
		hp.held <- key
		select {
		case <-hp.release:
		case <-req.Context().Done():
		}
		return resp, err
	})
	hp.srv = httptest.NewServer(rp)
	t.Cleanup(func() {
		close(hp.release)
		hp.srv.Close()
	})
	return hp
}

// holdNextUpload arms the proxy and waits until an upload's answer is
// held; it returns that object's key.
func (hp *holdingProxy) holdNextUpload(t *testing.T, within time.Duration) string {
	t.Helper()
	hp.armed.Store(true)
	select {
	case key := <-hp.held:
		return key
	case <-time.After(within):
		t.Fatalf("no WAL object upload through the proxy within %s", within)
		return ""
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// failoverDialer sends every connection of a client to one broker, which
// the test can change: a producer "fails over" when its broker dies.
type failoverDialer struct {
	mu   sync.Mutex
	addr string
}

func (d *failoverDialer) set(addr string) {
	d.mu.Lock()
	d.addr = addr
	d.mu.Unlock()
}

func (d *failoverDialer) DialContext(ctx context.Context, network, _ string) (net.Conn, error) {
	d.mu.Lock()
	addr := d.addr
	d.mu.Unlock()
	var nd net.Dialer
	return nd.DialContext(ctx, network, addr)
}

// recID names a workload record: producer p's record seq (clusterRecord).
type recID struct{ p, seq int }

// recPos is where a record is in the log.
type recPos struct {
	partition int32
	offset    int64
}

func (p recPos) String() string { return fmt.Sprintf("%d@%d", p.partition, p.offset) }

// seqProducer produces clusterRecord(topic, p, 0), (p, 1), ... through one
// client and keeps what each produce was answered.
type seqProducer struct {
	p    int
	done chan struct{}

	mu struct {
		sync.Mutex
		sent     int
		acked    map[int]recPos // seq -> where the broker said it is
		failed   map[int]error
		flushErr error
	}
}

// startSeqProducer produces in the background, about 2,000 records a
// second, until stop is closed or max records are sent, then flushes.
// Records are spread round-robin over the partitions.
func startSeqProducer(ctx context.Context, cl *kgo.Client, topic string, p int, partitions int32, max int, stop <-chan struct{}) *seqProducer {
	return startSeqProducerWith(ctx, cl, topic, p, partitions, 10, max, stop, nil, nil)
}

// startSeqProducerWith is startSeqProducer with perTick records every 5ms,
// and, when set, sent called as each record is handed to the client and
// acked as each is acknowledged, with its seq and when.
func startSeqProducerWith(ctx context.Context, cl *kgo.Client, topic string, p int, partitions int32, perTick, max int,
	stop <-chan struct{}, sent func(), acked func(seq int, at time.Time)) *seqProducer {
	sp := &seqProducer{p: p, done: make(chan struct{})}
	sp.mu.acked = map[int]recPos{}
	sp.mu.failed = map[int]error{}
	go func() {
		defer close(sp.done)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
	produce:
		for seq := 0; seq < max; {
			select {
			case <-stop:
				break produce
			case <-ctx.Done():
				break produce
			case <-tick.C:
			}
			for end := min(seq+perTick, max); seq < end; seq++ {
				if sent != nil {
					sent()
				}
				cl.Produce(ctx, clusterRecord(topic, p, seq, partitions), func(r *kgo.Record, err error) {
					now := time.Now()
					_, s := decodeClusterRecord(r)
					sp.mu.Lock()
					if err != nil {
						sp.mu.failed[s] = err
					} else {
						sp.mu.acked[s] = recPos{r.Partition, r.Offset}
					}
					sp.mu.Unlock()
					if err == nil && acked != nil {
						acked(s, now)
					}
				})
				sp.mu.Lock()
				sp.mu.sent++
				sp.mu.Unlock()
			}
		}
		err := cl.Flush(ctx)
		sp.mu.Lock()
		sp.mu.flushErr = err
		sp.mu.Unlock()
	}()
	return sp
}

func (sp *seqProducer) ackCount() int {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return len(sp.mu.acked)
}

// waitAcks waits until at least n records are acknowledged.
func (sp *seqProducer) waitAcks(t *testing.T, n int, within time.Duration) {
	t.Helper()
	testkit.CheckFor(t, within, 10*time.Millisecond, func() error {
		if got := sp.ackCount(); got < n {
			return fmt.Errorf("producer %d: %d records acknowledged, waiting for %d", sp.p, got, n)
		}
		return nil
	})
}

// wait waits for the producer's flush and returns how many records it
// sent, how many were acknowledged and how many failed.
func (sp *seqProducer) wait(t *testing.T) (sent, acked, failed int) {
	t.Helper()
	select {
	case <-sp.done:
	case <-time.After(60 * time.Second):
		t.Fatalf("producer %d did not finish its flush within 60s", sp.p)
	}
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if sp.mu.flushErr != nil {
		t.Errorf("producer %d: flush: %v", sp.p, sp.mu.flushErr)
	}
	if n := len(sp.mu.acked) + len(sp.mu.failed); n != sp.mu.sent {
		t.Errorf("producer %d: %d records sent, %d answered", sp.p, sp.mu.sent, n)
	}
	return sp.mu.sent, len(sp.mu.acked), len(sp.mu.failed)
}

// firstFailures returns up to n of the producer's failures, for messages.
func (sp *seqProducer) firstFailures(n int) []string {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	var out []string
	for seq, err := range sp.mu.failed {
		if len(out) == n {
			break
		}
		out = append(out, fmt.Sprintf("seq %d: %v", seq, err))
	}
	return out
}

func decodeClusterRecord(r *kgo.Record) (p, seq int) {
	return int(binary.BigEndian.Uint64(r.Value)), int(binary.BigEndian.Uint64(r.Value[8:]))
}

// readBack reads every partition of topic through the broker at addr from
// the start to the end offset it lists, checking that offsets are
// contiguous, that each record is intact and that each producer's records
// are in sequence order within a partition. It returns where each record
// was found: more than one place means it was written twice.
func readBack(t *testing.T, ctx context.Context, addr, topic string, partitions int32) map[recID][]recPos {
	t.Helper()
	parts := map[int32]kgo.Offset{}
	for p := range partitions {
		parts[p] = kgo.NewOffset().AtStart()
	}
	dial := func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.Dialer(dial), kgo.FetchMaxWait(500*time.Millisecond),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: parts}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	end := endOffsets(t, ctx, kadm.NewClient(cl), topic, 10*time.Second)
	total := int64(0)
	for _, e := range end {
		total += e
	}
	next := map[int32]int64{}
	lastSeq := map[[2]int]int{} // (partition, producer) -> seq
	where := map[recID][]recPos{}
	fetchErrs := map[string]int{} // retriable ones, for the diagnosis
	var got int64
	for got < total {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read back %d of %d records before the deadline: partitions read up to %v, their end offsets %v; fetch errors %v",
				got, total, next, end, fetchErrs)
		}
		fs.EachError(func(topic string, p int32, err error) {
			if !kerr.IsRetriable(err) {
				t.Fatalf("fetch %s/%d: %v", topic, p, err)
			}
			fetchErrs[fmt.Sprintf("%d: %v", p, err)]++
		})
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset != next[r.Partition] {
				t.Fatalf("partition %d: offset %d, want %d (contiguous from 0)", r.Partition, r.Offset, next[r.Partition])
			}
			if r.Offset >= end[r.Partition] {
				t.Fatalf("partition %d: record at %d, at or after the listed end %d", r.Partition, r.Offset, end[r.Partition])
			}
			next[r.Partition]++
			got++
			if len(r.Value) < 16 {
				t.Fatalf("partition %d offset %d: value %q is no workload record", r.Partition, r.Offset, r.Value)
			}
			p, seq := decodeClusterRecord(r)
			if want := fmt.Sprintf("payload-%d-%d", p, seq); string(r.Value[16:]) != want || int32(seq)%partitions != r.Partition {
				t.Fatalf("partition %d offset %d: record %q of producer %d seq %d", r.Partition, r.Offset, r.Value[16:], p, seq)
			}
			k := [2]int{int(r.Partition), p}
			if last, ok := lastSeq[k]; ok && seq <= last {
				t.Errorf("partition %d offset %d: producer %d seq %d after seq %d", r.Partition, r.Offset, p, seq, last)
			}
			lastSeq[k] = seq
			id := recID{p, seq}
			where[id] = append(where[id], recPos{r.Partition, r.Offset})
		})
	}
	return where
}

// checkExactlyOnce checks what was read back against what the producers
// were answered: no record twice; every acknowledged record exactly once,
// where its acknowledgement said; nothing that was never sent. It returns
// how many records are in the log although their produce failed.
func checkExactlyOnce(t *testing.T, where map[recID][]recPos, producers ...*seqProducer) (unackedPresent int) {
	t.Helper()
	byP := map[int]*seqProducer{}
	for _, sp := range producers {
		byP[sp.p] = sp
	}
	dups := 0
	for id, pos := range where {
		if len(pos) > 1 {
			if dups++; dups <= 10 {
				t.Errorf("producer %d seq %d is in the log %d times: %v", id.p, id.seq, len(pos), pos)
			}
		}
		sp := byP[id.p]
		if sp == nil {
			t.Errorf("producer %d seq %d at %v: no such producer", id.p, id.seq, pos)
			continue
		}
		sp.mu.Lock()
		_, acked := sp.mu.acked[id.seq]
		sent := sp.mu.sent
		sp.mu.Unlock()
		switch {
		case id.seq >= sent:
			t.Errorf("producer %d seq %d at %v: never sent (%d sent)", id.p, id.seq, pos, sent)
		case !acked:
			unackedPresent++
		}
	}
	if dups > 0 {
		t.Errorf("%d records are in the log more than once", dups)
	}
	missing := 0
	for _, sp := range producers {
		sp.mu.Lock()
		for seq, ack := range sp.mu.acked {
			pos := where[recID{sp.p, seq}]
			if len(pos) == 1 && pos[0] == ack {
				continue
			}
			if missing++; missing <= 10 {
				t.Errorf("producer %d seq %d acknowledged at %v, found at %v", sp.p, seq, ack, pos)
			}
		}
		sp.mu.Unlock()
	}
	if missing > 0 {
		t.Errorf("%d acknowledged records are not in the log exactly once where acknowledged", missing)
	}
	return unackedPresent
}

// crashProducerOpts are the options of the crash tests' producers: franz-go
// defaults (idempotent, acks=all, up to 5 requests in flight, retries)
// plus manual partitioning and a bounded buffer.
func crashProducerOpts(deliveryTimeout time.Duration) []kgo.Opt {
	return []kgo.Opt{
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(5 * time.Millisecond),
		kgo.MaxBufferedRecords(2000),
		kgo.RecordDeliveryTimeout(deliveryTimeout),
	}
}

// coordObjects reads the coordinator's object gauges from its /metrics:
// the objects it knows, live (referenced by batches) and garbage.
func coordObjects(httpAddr string) (live, garbage int64, err error) {
	l, err := floetest.Metric(httpAddr, "floe_coordinator_objects", `state="live"`)
	if err != nil {
		return 0, 0, err
	}
	g, err := floetest.Metric(httpAddr, "floe_coordinator_objects", `state="garbage"`)
	if err != nil {
		return 0, 0, err
	}
	return int64(l), int64(g), nil
}

// TestCrashBrokerDuringProduce kills (SIGKILL) one of two brokers in the
// middle of a produce load, right after one of its objects was uploaded
// (its S3 answer held back by a proxy, so it was never committed). An
// idempotent producer on the killed broker fails over to the other one and
// retries its in-flight batches there; a second producer works through the
// other broker throughout. Every acknowledged record is then read back
// exactly once, at the offset it was acknowledged with, offsets
// contiguous; no record is in the log twice. The killed broker's
// uncommitted object is deleted by the coordinator's collector after
// --gc-grace, until the bucket holds exactly the objects the coordinator
// references, all still readable through a new broker with an empty cache.
func TestCrashBrokerDuringProduce(t *testing.T) { testCrashBrokerDuringProduce(t, 1) }

// TestCrashBrokerDuringProduceSharded is TestCrashBrokerDuringProduce on
// a coordinator of two shards: the orphan is collected by shard 0 having
// asked shard 1, and nothing live on either shard goes.
func TestCrashBrokerDuringProduceSharded(t *testing.T) { testCrashBrokerDuringProduce(t, 2) }

func testCrashBrokerDuringProduce(t *testing.T, shards int) {
	const gcGrace = 3 * time.Second
	start := time.Now()
	opts := floetest.ClusterOptions{CoordinatorArgs: []string{"--gc-grace", gcGrace.String()}}
	if shards > 1 {
		opts.CoordinatorArgs = append(opts.CoordinatorArgs, "--shards", strconv.Itoa(shards))
		opts.BrokerArgs = []string{"--coordinator-shards", strconv.Itoa(shards)}
	}
	c := floetest.RunClusterWith(t, 0, opts)
	coords := []*floetest.Process{c.Coord}
	for s := 1; s < shards; s++ {
		coords = append(coords, startShard(t, c, s, shards, t.TempDir(), "--gc-grace", gcGrace.String()))
	}
	proxy := startHoldingProxy(t, c.MinIO)
	b1 := c.AddBrokerVia(1, proxy.srv.URL)
	b2 := c.AddBroker(2)
	t.Logf("cluster up in %s", time.Since(start).Round(time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute) // a bound, not a pace: producers stop on their own
	defer cancel()

	const topic, partitions = "crash-broker", 12
	if _, err := kadm.NewClient(pinnedClient(t, b2.KafkaAddr)).CreateTopic(ctx, partitions, 1, nil, topic); err != nil {
		t.Fatalf("create topic: %v", err)
	}
	dialer := &failoverDialer{addr: b1.KafkaAddr}
	cl1, err := kgo.NewClient(append(crashProducerOpts(30*time.Second), kgo.SeedBrokers(b1.KafkaAddr), kgo.Dialer(dialer.DialContext))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl1.Close()
	cl2 := pinnedClient(t, b2.KafkaAddr, crashProducerOpts(30*time.Second)...)
	stop := make(chan struct{})
	const maxPerProducer = 20000
	p1 := startSeqProducer(ctx, cl1, topic, 1, partitions, maxPerProducer, stop)
	p2 := startSeqProducer(ctx, cl2, topic, 2, partitions, maxPerProducer, stop)
	p1.waitAcks(t, 1000, 20*time.Second)
	p2.waitAcks(t, 1000, 20*time.Second)

	// The crash: broker 1 dies with an object uploaded but not committed,
	// and produce requests in flight. Producer 1's new connections (its
	// retries) go to broker 2.
	orphan := proxy.holdNextUpload(t, 10*time.Second)
	dialer.set(b2.KafkaAddr)
	killedAt := time.Now()
	b1.Kill()
	ackedAtKill := p1.ackCount()
	if _, err := c.MinIO.Store(t).Head(ctx, orphan); err != nil {
		t.Fatalf("the killed broker's uploaded object %s: %v", orphan, err)
	}
	p1.waitAcks(t, ackedAtKill+1000, 30*time.Second)
	resumed := time.Since(killedAt)
	p2.waitAcks(t, p2.ackCount()+200, 10*time.Second)
	close(stop)
	sent1, acked1, failed1 := p1.wait(t)
	sent2, acked2, failed2 := p2.wait(t)
	t.Logf("broker 1 killed with object %s uploaded but uncommitted, after producer 1 had %d acks; producer 1 had 1000 more through broker 2 %s later",
		orphan, ackedAtKill, resumed.Round(time.Millisecond))
	t.Logf("producer 1: %d sent, %d acknowledged, %d failed; producer 2: %d sent, %d acknowledged, %d failed",
		sent1, acked1, failed1, sent2, acked2, failed2)
	if failed1 > 0 {
		t.Logf("producer 1 failures (sample): %v", p1.firstFailures(5))
	}
	if failed2 > 0 {
		t.Errorf("producer 2, on the surviving broker, had %d records fail: %v", failed2, p2.firstFailures(5))
	}
	loaded := time.Now()

	store := c.MinIO.Store(t)
	listed, err := store.List(ctx, "wal/")
	if err != nil {
		t.Fatal(err)
	}
	live, garbage, err := coordObjects(c.Coord.HTTPAddr)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("after the load: %d objects under wal/, the coordinator knows %d live and %d garbage",
		len(listed), live, garbage)

	readStart := time.Now()
	where := readBack(t, ctx, b2.KafkaAddr, topic, partitions)
	unacked := checkExactlyOnce(t, where, p1, p2)
	t.Logf("read back %d records through broker 2 in %s: every acknowledged record once; %d records in the log whose produce failed",
		len(where), time.Since(readStart).Round(time.Millisecond), unacked)
	if t.Failed() {
		t.FailNow()
	}

	// The collector: after the grace period the bucket holds exactly the
	// objects the coordinator references: the orphan and any garbage are
	// gone.
	testkit.CheckFor(t, 10*gcGrace, 250*time.Millisecond, func() error {
		listed, err := store.List(ctx, "wal/")
		if err != nil {
			return err
		}
		for _, o := range listed {
			if o.Key == orphan {
				return fmt.Errorf("the killed broker's orphan %s is still there", orphan)
			}
		}
		for s, p := range coords {
			live, garbage, err := coordObjects(p.HTTPAddr)
			if err != nil {
				return err
			}
			// One shard knows every object; shards share them, so
			// only their garbage adds up.
			if garbage != 0 || shards == 1 && int64(len(listed)) != live {
				return fmt.Errorf("%d objects under wal/, shard %d knows %d live and %d garbage", len(listed), s, live, garbage)
			}
		}
		return nil
	})
	listed, _ = store.List(ctx, "wal/")
	t.Logf("collected %s after the load: %d objects left under wal/, as many as the coordinator references",
		time.Since(loaded).Round(time.Millisecond), len(listed))

	// None of the deleted objects was live: a new broker, its cache empty,
	// reads every record from the bucket, where it was before. (With the
	// counts equal above, the bucket holds exactly the live objects.)
	b3 := c.AddBroker(3)
	readStart = time.Now()
	again := readBack(t, ctx, b3.KafkaAddr, topic, partitions)
	if len(again) != len(where) {
		t.Errorf("read back %d records through a new broker after the collection, %d before", len(again), len(where))
	}
	for id, pos := range where {
		if now := again[id]; len(now) != 1 || now[0] != pos[0] {
			t.Errorf("producer %d seq %d at %v before the collection, at %v after", id.p, id.seq, pos, now)
		}
	}
	t.Logf("read back %d records through a new broker 3 after the collection in %s; total %s",
		len(again), time.Since(readStart).Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
}

// TestCrashCoordinatorDuringProduce kills (SIGKILL) the coordinator in the
// middle of an idempotent producer's load. While it is down, the broker
// answers retriable errors at once and acknowledges nothing; the producer
// retries. Restarted on the same --data-dir, the coordinator has every
// acknowledged batch, and the producer finishes with every record
// acknowledged: each in the log exactly once, where acknowledged, with no
// gaps.
func TestCrashCoordinatorDuringProduce(t *testing.T) {
	start := time.Now()
	c := floetest.RunCluster(t, 1)
	b1 := c.Brokers[0]
	t.Logf("cluster up in %s", time.Since(start).Round(time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute) // a bound, not a pace: producers stop on their own
	defer cancel()

	// The workload's topic, and one for the test's own probes.
	const topic, partitions, probes = "crash-coordinator", 8, "crash-coordinator-probes"
	raw := pinnedClient(t, b1.KafkaAddr)
	if _, err := kadm.NewClient(raw).CreateTopic(ctx, partitions, 1, nil, topic); err != nil {
		t.Fatalf("create topic: %v", err)
	}
	if _, err := kadm.NewClient(raw).CreateTopic(ctx, 1, 1, nil, probes); err != nil {
		t.Fatalf("create topic: %v", err)
	}
	cl := pinnedClient(t, b1.KafkaAddr, crashProducerOpts(60*time.Second)...)
	stop := make(chan struct{})
	p := startSeqProducer(ctx, cl, topic, 1, partitions, 20000, stop)
	p.waitAcks(t, 1000, 20*time.Second)

	killedAt := time.Now()
	c.Coord.Kill()
	ackedAtKill := p.ackCount()
	// Meanwhile the broker answers a retriable error at once (no
	// responders), never a hang past the request timeout.
	probeStart := time.Now()
	code := produceRaw(t, raw, probes, 0, buildBatch(t, []byte("while the coordinator is dead")))
	if err := kerr.ErrorForCode(code); !kerr.IsRetriable(err) {
		t.Errorf("produce with the coordinator dead: %v, want a retriable error", err)
	}
	t.Logf("produce with the coordinator dead: %v after %s", kerr.ErrorForCode(code), time.Since(probeStart).Round(time.Millisecond))
	// Answers already on their way when it died may still arrive: wait
	// until none has for half a second (a slow machine's stragglers come
	// late). After that nothing is acknowledged until it is back, which
	// only a window of time can show.
	settled, quietSince := p.ackCount(), time.Now()
	testkit.CheckFor(t, 20*time.Second, 20*time.Millisecond, func() error {
		if n := p.ackCount(); n != settled {
			settled, quietSince = n, time.Now()
		}
		if time.Since(quietSince) < 500*time.Millisecond {
			return fmt.Errorf("acks still arriving (%d)", settled)
		}
		return nil
	})
	time.Sleep(1500 * time.Millisecond)
	if now := p.ackCount(); now != settled {
		t.Errorf("%d records acknowledged while the coordinator was dead", now-settled)
	}

	restartAt := time.Now()
	c.StartCoordinator()
	restarted := time.Since(restartAt)
	// The broker uses the new coordinator as soon as it serves; the
	// producer's first ack comes after its retry backoff.
	testkit.CheckFor(t, 20*time.Second, 10*time.Millisecond, func() error {
		return kerr.ErrorForCode(produceRaw(t, raw, probes, 0, buildBatch(t, []byte("after the restart"))))
	})
	brokerBack := time.Since(restartAt)
	p.waitAcks(t, settled+1, 30*time.Second)
	firstAck := time.Since(restartAt)
	p.waitAcks(t, settled+1000, 30*time.Second)
	close(stop)
	sent, acked, failed := p.wait(t)
	t.Logf("coordinator killed after %d acks (%d by the time answers settled), down %s, restarted in %s; "+
		"after the restart began, a raw produce succeeded at %s, the producer's first ack came at %s",
		ackedAtKill, settled, restartAt.Sub(killedAt).Round(time.Millisecond), restarted.Round(time.Millisecond),
		brokerBack.Round(time.Millisecond), firstAck.Round(time.Millisecond))
	t.Logf("producer: %d sent, %d acknowledged, %d failed", sent, acked, failed)
	if failed > 0 {
		t.Errorf("%d records failed (delivery timeout 60s): %v", failed, p.firstFailures(5))
	}

	readStart := time.Now()
	where := readBack(t, ctx, b1.KafkaAddr, topic, partitions)
	unacked := checkExactlyOnce(t, where, p)
	if unacked != 0 {
		t.Errorf("%d records in the log were not acknowledged", unacked)
	}
	// No gaps: every record sent is there.
	if len(where) != sent {
		t.Errorf("%d distinct records in the log, %d sent", len(where), sent)
	}
	t.Logf("read back %d records in %s; total %s", len(where), time.Since(readStart).Round(time.Millisecond),
		time.Since(start).Round(time.Millisecond))
}

// produceAt sends one Produce request of records to topic/partition 0 and
// returns the partition's error code and base offset.
func produceAt(ctx context.Context, cl *kgo.Client, topic string, records []byte) (int16, int64, error) {
	req := kmsg.NewPtrProduceRequest()
	req.Acks = -1
	req.TimeoutMillis = 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = records
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return 0, 0, err
	}
	sp := resp.Topics[0].Partitions[0]
	return sp.ErrorCode, sp.BaseOffset, nil
}

// produceWrites counts the Produce requests a client has written to its
// connections (a kgo hook), so a test knows a request is in a broker's
// socket even when that broker is stopped.
type produceWrites struct{ n atomic.Int64 }

// OnBrokerWrite implements kgo.HookBrokerWrite.
func (w *produceWrites) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if key == kmsg.Produce.Int16() && err == nil {
		w.n.Add(1)
	}
}

// TestRetryThroughAnotherBroker sends an idempotent batch (fixed producer
// id, epoch and sequence) through broker 1 and the same bytes again
// through broker 2, as a producer retrying after a timeout does: the
// retry is answered with the original offsets and the log grows once.
// Then the other order: broker 1 is hung (SIGSTOP) with the batch in its
// socket, the retry through broker 2 is written, and when broker 1 wakes
// up its late copy is answered with the retry's offsets, not written
// again. Last, the same holds for a retry after the coordinator crashed
// (SIGKILL) and restarted: its producer state is durable.
func TestRetryThroughAnotherBroker(t *testing.T) {
	start := time.Now()
	c := floetest.RunCluster(t, 2)
	b1, b2 := c.Brokers[0], c.Brokers[1]
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute) // a bound, not a pace: producers stop on their own
	defer cancel()
	const topic = "retry"
	writes := &produceWrites{}
	cl1, cl2 := pinnedClient(t, b1.KafkaAddr, kgo.WithHooks(writes)), pinnedClient(t, b2.KafkaAddr)
	if _, err := kadm.NewClient(cl1).CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		t.Fatalf("create topic: %v", err)
	}
	endOffset := func() int64 {
		t.Helper()
		listed, err := kadm.NewClient(cl2).ListEndOffsets(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		o, _ := listed.Lookup(topic, 0)
		if o.Err != nil {
			t.Fatal(o.Err)
		}
		return o.Offset
	}
	mustProduce := func(cl *kgo.Client, batch []byte, what string) int64 {
		t.Helper()
		code, base, err := produceAt(ctx, cl, topic, batch)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if code != 0 {
			t.Fatalf("%s: %v", what, kerr.ErrorForCode(code))
		}
		return base
	}
	// Two plain records first, so that the idempotent batch's offset is
	// not 0.
	mustProduce(cl1, buildBatch(t, []byte("plain-0")), "plain batch")
	mustProduce(cl1, buildBatch(t, []byte("plain-1")), "plain batch")

	ipr := kmsg.NewPtrInitProducerIDRequest()
	ipr.TransactionTimeoutMillis = 60000
	ip, err := ipr.RequestWith(ctx, cl1)
	if err != nil {
		t.Fatal(err)
	}
	if err := kerr.ErrorForCode(ip.ErrorCode); err != nil {
		t.Fatalf("init producer id: %v", err)
	}
	batch := func(baseSeq int32, values ...string) []byte {
		t.Helper()
		recs := make([]record.Record, len(values))
		for i, v := range values {
			recs[i] = record.Record{Key: []byte("k"), Value: []byte(v)}
		}
		b, err := record.Build(record.BuildOptions{ProducerID: ip.ProducerID, ProducerEpoch: ip.ProducerEpoch,
			BaseSequence: baseSeq, PartitionLeaderEpoch: -1, BaseTimestamp: time.Now().UnixMilli()}, recs)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}

	// The answer from broker 1 is lost; the producer retries through
	// broker 2.
	first := batch(0, "a0", "a1", "a2")
	t0 := time.Now()
	base1 := mustProduce(cl1, first, "batch a through broker 1")
	base2 := mustProduce(cl2, first, "batch a again through broker 2")
	if base1 != 2 || base2 != base1 {
		t.Errorf("batch a: base offset %d through broker 1, %d through broker 2; want 2 both times", base1, base2)
	}
	if end := endOffset(); end != 5 {
		t.Errorf("end offset %d after batch a twice, want 5", end)
	}
	t.Logf("batch a: offset %d through broker 1, the retry through broker 2 answered %d, in %s", base1, base2, time.Since(t0).Round(time.Millisecond))

	// Broker 1 hangs with batch b in its socket; the producer times out and
	// retries through broker 2; then broker 1 wakes up and handles its copy.
	second := batch(3, "b0", "b1", "b2")
	if err := b1.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b1.Signal(syscall.SIGCONT) })
	type answer struct {
		code int16
		base int64
		err  error
	}
	late := make(chan answer, 1)
	written := writes.n.Load()
	go func() {
		code, base, err := produceAt(ctx, cl1, topic, second)
		late <- answer{code, base, err}
	}()
	// The request is in broker 1's socket.
	testkit.CheckFor(t, 10*time.Second, time.Millisecond, func() error {
		if writes.n.Load() == written {
			return errors.New("batch b not written to broker 1 yet")
		}
		return nil
	})
	select {
	case a := <-late:
		t.Fatalf("broker 1 answered while stopped: %+v", a)
	default:
	}
	t0 = time.Now()
	retried := mustProduce(cl2, second, "batch b through broker 2 while broker 1 hangs")
	if retried != 5 {
		t.Errorf("batch b through broker 2: base offset %d, want 5", retried)
	}
	if err := b1.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	var a answer
	select {
	case a = <-late:
	case <-time.After(20 * time.Second):
		t.Fatal("broker 1 did not answer batch b within 20s of waking up")
	}
	if a.err != nil || a.code != 0 || a.base != retried {
		t.Errorf("broker 1's late copy of batch b: base offset %d, %v, %v; want %d and no error",
			a.base, kerr.ErrorForCode(a.code), a.err, retried)
	}
	if end := endOffset(); end != 8 {
		t.Errorf("end offset %d after batch b twice, want 8", end)
	}
	t.Logf("batch b: offset %d through broker 2, broker 1's late copy answered %d, %s after the retry", retried, a.base, time.Since(t0).Round(time.Millisecond))

	// The coordinator crashes and restarts on its data dir: it still knows
	// the producer's last batches, so one more retry of batch b gets its
	// offsets, and the next batch follows it.
	c.Coord.Kill()
	t0 = time.Now()
	c.StartCoordinator()
	var code int16
	var base int64
	testkit.CheckFor(t, 20*time.Second, 20*time.Millisecond, func() error {
		var err error
		if code, base, err = produceAt(ctx, cl2, topic, second); err != nil {
			return err
		}
		if e := kerr.ErrorForCode(code); kerr.IsRetriable(e) {
			return e // the broker is not using the new coordinator yet
		}
		return nil
	})
	if code != 0 || base != retried {
		t.Errorf("batch b through broker 2 after a coordinator restart: base offset %d, %v; want %d and no error",
			base, kerr.ErrorForCode(code), retried)
	}
	if next := mustProduce(cl1, batch(6, "c0", "c1"), "batch c after the restart"); next != 8 {
		t.Errorf("batch c after the restart: base offset %d, want 8", next)
	}
	if end := endOffset(); end != 10 {
		t.Errorf("end offset %d after batch b thrice and batch c, want 10", end)
	}
	t.Logf("batch b retried after a coordinator crash: offset %d, %s after the restart began", base, time.Since(t0).Round(time.Millisecond))

	// The log holds each record once.
	cons := pinnedClient(t, b2.KafkaAddr, kgo.FetchMaxWait(500*time.Millisecond),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	want := []string{"plain-0", "plain-1", "a0", "a1", "a2", "b0", "b1", "b2", "c0", "c1"}
	var got []string
	for len(got) < len(want) {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %q before the deadline, want %q", got, want)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset != int64(len(got)) {
				t.Fatalf("record at offset %d, want %d", r.Offset, len(got))
			}
			got = append(got, string(r.Value))
		})
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("log holds %q, want %q", got, want)
	}
	t.Logf("total %s", time.Since(start).Round(time.Millisecond))
}
