package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/coordinator"
	"github.com/floe-io/floe/internal/testkit"
	"github.com/floe-io/floe/internal/testkit/floetest"
	"github.com/floe-io/floe/node"
	"github.com/floe-io/floe/objectstore"
	"github.com/floe-io/floe/tiered"
)

// tierCluster starts a cluster that consolidates fast: the planner looks
// every 200ms, idle brokers ask for jobs every 100ms, and garbage lives
// gcGrace.
func tierCluster(t *testing.T, brokers int, gcGrace time.Duration, coordArgs ...string) *floetest.Cluster {
	t.Helper()
	return floetest.RunClusterWith(t, brokers, floetest.ClusterOptions{
		CoordinatorArgs: append([]string{"--tier-interval", "200ms", "--gc-grace", gcGrace.String()}, coordArgs...),
		BrokerArgs:      []string{"--tier-poll-interval", "100ms"},
	})
}

// produceRounds produces w's records through the brokers in turn, a round
// at a time (each round its own objects), so that every partition's log
// spans many WAL objects written by several brokers.
//
// A round is one batch per partition in one Produce request: the records
// linger until Flush sends them together. (With no linger the client sends
// the first record while the rest are still being buffered, and how a round
// splits would depend on the machine's speed; TestTieredRetention counts
// objects.)
func produceRounds(t *testing.T, c *floetest.Cluster, w workload, rounds int) {
	t.Helper()
	cls := make([]*kgo.Client, len(c.Brokers))
	for i, b := range c.Brokers {
		cls[i] = pinnedClient(t, b.KafkaAddr, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(time.Minute))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	per := (w.records + rounds - 1) / rounds
	for r := 0; r*per < w.records; r++ {
		cl := cls[r%len(cls)]
		var (
			mu    sync.Mutex
			first error
		)
		for i := r * per; i < min((r+1)*per, w.records); i++ {
			cl.Produce(ctx, w.record(i), func(_ *kgo.Record, err error) {
				mu.Lock()
				defer mu.Unlock()
				if first == nil {
					first = err
				}
			})
		}
		if err := cl.Flush(ctx); err != nil {
			t.Fatalf("produce round %d: %v", r, err)
		}
		mu.Lock()
		err := first
		mu.Unlock()
		if err != nil {
			t.Fatalf("produce round %d: %v", r, err)
		}
	}
}

// waitConsolidated waits until the coordinator reports none of topic's
// bytes in the WAL tier, and at least minSegments segments.
func waitConsolidated(t testing.TB, c *floetest.Cluster, topic string, minSegments int, within time.Duration) {
	t.Helper()
	testkit.CheckFor(t, within, 100*time.Millisecond, func() error {
		wal, err := floetest.Metric(c.Coord.HTTPAddr, "floe_partition_wal_bytes", fmt.Sprintf(`topic="%s"`, topic))
		if err != nil {
			return err
		}
		segs, err := floetest.Metric(c.Coord.HTTPAddr, "floe_partition_segments", fmt.Sprintf(`topic="%s"`, topic))
		if err != nil {
			return err
		}
		if wal != 0 || segs < float64(minSegments) {
			return fmt.Errorf("%s: %v bytes in the WAL tier, %v segments (want 0 and >= %d)", topic, wal, segs, minSegments)
		}
		return nil
	})
}

// bucketKeys lists the bucket's keys under prefix.
func bucketKeys(t *testing.T, store objectstore.Store, prefix string) []string {
	t.Helper()
	objs, err := store.List(context.Background(), prefix)
	if err != nil {
		t.Fatal(err)
	}
	keys := make([]string, len(objs))
	for i, o := range objs {
		keys[i] = o.Key
	}
	return keys
}

// TestTieredConsolidation produces a topic through many objects written by
// two brokers, waits until consolidation has moved every batch into
// per-partition segments and the collector has deleted every WAL object,
// then reads everything back through a third broker with an empty cache:
// offsets, keys, values, headers and timestamps, ListOffsets earliest,
// latest and by timestamp (exact to the record).
func TestTieredConsolidation(t *testing.T) {
	// gc-grace caps a tier job's lease at half of it: 4s leaves a slow
	// machine 2s a job.
	const gcGrace = 4 * time.Second
	c := tierCluster(t, 2, gcGrace)
	adm := kadm.NewClient(pinnedClient(t, c.Brokers[0].KafkaAddr))
	w := workload{topic: "tiered", partitions: 3, records: 3000, baseTime: time.UnixMilli(1_750_000_000_000)}
	// segment.bytes at its minimum, so that each partition gets several.
	if _, err := adm.CreateTopic(context.Background(), w.partitions, -1, map[string]*string{
		"local.retention.ms": kadm.StringPtr("500"), "segment.bytes": kadm.StringPtr("1048576"),
		"retention.ms": kadm.StringPtr("-1"),
	}, w.topic); err != nil {
		t.Fatal(err)
	}
	produceRounds(t, c, w, 12)
	waitConsolidated(t, c, w.topic, int(w.partitions), time.Minute)

	store := c.MinIO.Store(t)
	testkit.CheckFor(t, 30*time.Second, 200*time.Millisecond, func() error {
		if wal := bucketKeys(t, store, "wal/"); len(wal) > 0 {
			return fmt.Errorf("%d WAL objects left, e.g. %s", len(wal), wal[0])
		}
		return nil
	})
	segs := bucketKeys(t, store, "tiered/")
	if len(segs) < int(w.partitions) {
		t.Fatalf("%d segment objects: %v", len(segs), segs)
	}
	for _, k := range segs {
		if !strings.HasSuffix(k, ".seg") {
			t.Errorf("segment key %q", k)
		}
	}

	b3 := c.AddBroker(3)
	w.consumeAndCheck(t, b3.KafkaAddr)
	w.checkListOffsets(t, kadm.NewClient(pinnedClient(t, b3.KafkaAddr)))
}

// TestTieredRetention checks retention on both tiers: retention.ms
// empties a consolidated topic and its segments leave the bucket;
// retention.bytes keeps the newest bytes (Fetch below the new log start is
// OFFSET_OUT_OF_RANGE); DeleteRecords moves the log start into a segment
// and then into the WAL tier.
func TestTieredRetention(t *testing.T) {
	// gc-grace caps a tier job's lease at half of it: 4s leaves a slow
	// machine 2s a job.
	const gcGrace = 4 * time.Second
	c := tierCluster(t, 1, gcGrace)
	ctx := context.Background()
	addr := c.Brokers[0].KafkaAddr
	adm := kadm.NewClient(pinnedClient(t, addr))
	store := c.MinIO.Store(t)

	// By time: records stamped now, consolidated first, then deleted,
	// segments and all, once retention.ms=4s is set. (Set at creation, it
	// could delete the records before the test sees them consolidated on
	// a slow machine, and the wait for a segment would never end.)
	if _, err := adm.CreateTopic(ctx, 1, -1, map[string]*string{
		"local.retention.ms": kadm.StringPtr("300"), "retention.ms": kadm.StringPtr("-1"),
	}, "ret-time"); err != nil {
		t.Fatal(err)
	}
	wt := workload{topic: "ret-time", partitions: 1, records: 500, baseTime: time.Now()}
	produceRounds(t, c, wt, 5)
	waitConsolidated(t, c, wt.topic, 1, 30*time.Second)
	alterTopicConfigs(t, ctx, adm, wt.topic, "retention.ms", "4000")
	testkit.CheckFor(t, 30*time.Second, 200*time.Millisecond, func() error {
		start, err := adm.ListStartOffsets(ctx, wt.topic)
		if err != nil {
			return err
		}
		if o, _ := start.Lookup(wt.topic, 0); o.Offset != 500 {
			return fmt.Errorf("log start %d, want 500", o.Offset)
		}
		if segs := bucketKeys(t, store, "tiered/"); len(segs) > 0 {
			return fmt.Errorf("%d segment objects left", len(segs))
		}
		return nil
	})

	// By size: 20 rounds (an object each) of about 2.6 KB (compressed) in
	// the WAL tier; retention.bytes=20000 keeps the newest batches summing
	// to at least that, and the objects of the others leave the bucket. (A segment goes
	// whole, as in Kafka: one larger than what retention.bytes lets go
	// stays.)
	if _, err := adm.CreateTopic(ctx, 1, -1, map[string]*string{
		"local.retention.ms": kadm.StringPtr("-1"), "retention.bytes": kadm.StringPtr("20000"), "retention.ms": kadm.StringPtr("-1"),
	}, "ret-size"); err != nil {
		t.Fatal(err)
	}
	ws := workload{topic: "ret-size", partitions: 1, records: 2000, baseTime: time.Now()}
	produceRounds(t, c, ws, 20)
	var logStart int64
	testkit.CheckFor(t, 30*time.Second, 200*time.Millisecond, func() error {
		start, err := adm.ListStartOffsets(ctx, ws.topic)
		if err != nil {
			return err
		}
		o, _ := start.Lookup(ws.topic, 0)
		if o.Offset < 1000 {
			return fmt.Errorf("log start %d, want most of the 2000 records gone", o.Offset)
		}
		logStart = o.Offset
		// ret-time's objects are gone; ret-size's 20 are down to the few
		// holding what is kept.
		if wal := bucketKeys(t, store, "wal/"); len(wal) > 9 {
			return fmt.Errorf("%d WAL objects in the bucket", len(wal))
		}
		return nil
	})
	if code := fetchCode(t, addr, ws.topic, logStart-1); code != kerr.OffsetOutOfRange.Code {
		t.Errorf("fetch below the log start answered %d, want OFFSET_OUT_OF_RANGE", code)
	}

	// DeleteRecords across tiers: into a segment, then into the WAL tier.
	if _, err := adm.CreateTopic(ctx, 1, -1, map[string]*string{
		"local.retention.ms": kadm.StringPtr("300"), "retention.ms": kadm.StringPtr("-1"),
	}, "ret-delete"); err != nil {
		t.Fatal(err)
	}
	wd := workload{topic: "ret-delete", partitions: 1, records: 1000, baseTime: time.Now()}
	produceRounds(t, c, wd, 4)
	waitConsolidated(t, c, wd.topic, 1, 30*time.Second)
	more := workload{topic: "ret-delete", partitions: 1, records: 200, baseTime: time.Now()}
	cl2 := pinnedClient(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := cl2.ProduceSync(ctx, more.record(0)).FirstErr(); err != nil {
		t.Fatal(err)
	}
	for _, off := range []int64{123, 1000} {
		resp, err := adm.DeleteRecords(ctx, kadm.Offsets{wd.topic: {0: {At: off}}})
		if err != nil {
			t.Fatal(err)
		}
		if r, _ := resp.Lookup(wd.topic, 0); r.Err != nil || r.LowWatermark != off {
			t.Fatalf("DeleteRecords(%d): low watermark %d, %v", off, r.LowWatermark, r.Err)
		}
		start, err := adm.ListStartOffsets(ctx, wd.topic)
		if err != nil {
			t.Fatal(err)
		}
		if o, _ := start.Lookup(wd.topic, 0); o.Offset != off {
			t.Fatalf("after DeleteRecords(%d) earliest is %d", off, o.Offset)
		}
		if got := firstFetched(t, addr, wd.topic, off); got != off {
			t.Fatalf("after DeleteRecords(%d) a fetch from it starts at %d", off, got)
		}
	}
}

// rawFetch sends one Fetch of topic's partition 0 from offset to
// addr and returns its partition answer.
func rawFetch(t *testing.T, addr, topic string, offset int64) kmsg.FetchResponseTopicPartition {
	t.Helper()
	cl := pinnedClient(t, addr)
	// The client sends the highest version both sides know (13 names
	// topics by id): give both.
	td, err := kadm.NewClient(cl).ListTopics(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrFetchRequest()
	req.MaxWaitMillis = 0
	req.MaxBytes = 1 << 20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = topic, td[topic].ID
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.FetchOffset = offset
	rp.PartitionMaxBytes = 1 << 20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("fetch answered %+v", resp)
	}
	return resp.Topics[0].Partitions[0]
}

// fetchCode is the error code of a Fetch from offset.
func fetchCode(t *testing.T, addr, topic string, offset int64) int16 {
	return rawFetch(t, addr, topic, offset).ErrorCode
}

// firstFetched is the offset of the first record a Fetch from offset
// returns at or after it (a batch may start before it).
func firstFetched(t *testing.T, addr, topic string, offset int64) int64 {
	t.Helper()
	p := rawFetch(t, addr, topic, offset)
	if p.ErrorCode != 0 {
		t.Fatalf("fetch from %d: error %d", offset, p.ErrorCode)
	}
	fp, _ := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{Topic: topic, Partition: 0, Offset: offset}, &p, kgo.DefaultDecompressor(), nil)
	if fp.Err != nil {
		t.Fatalf("fetch from %d: %v", offset, fp.Err)
	}
	for _, r := range fp.Records {
		if r.Offset >= offset {
			return r.Offset
		}
	}
	t.Fatalf("fetch from %d returned no record at or after it", offset)
	return -1
}

// TestTieredCrash kills (SIGKILL) the broker running consolidation jobs,
// then the coordinator, while an idempotent producer keeps writing and
// jobs keep running, so that jobs die at every step: reading, segment
// half-written or uploaded but not swapped (the coordinator gone before
// the swap), swapped but the WAL objects not collected yet. Then every
// acknowledged record is read back exactly once, where it was
// acknowledged, and once the collector's grace has passed the bucket holds
// exactly the segments the coordinator references: no orphan is left.
func TestTieredCrash(t *testing.T) {
	const gcGrace = 3 * time.Second
	c := floetest.RunClusterWith(t, 0, floetest.ClusterOptions{
		CoordinatorArgs: []string{"--tier-interval", "100ms", "--gc-grace", gcGrace.String()},
		BrokerArgs:      []string{"--tier-poll-interval", "50ms"},
	})
	// Broker 1 serves the producer and runs no jobs; broker 2 runs them all.
	b1 := c.AddBroker(1, "--consolidation-enabled=false")
	b2 := c.AddBroker(2)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const topic, partitions = "tier-crash", 4
	raw := pinnedClient(t, b1.KafkaAddr)
	if _, err := kadm.NewClient(raw).CreateTopic(ctx, partitions, -1, map[string]*string{
		"local.retention.ms": kadm.StringPtr("200"), "retention.ms": kadm.StringPtr("-1"),
	}, topic); err != nil {
		t.Fatal(err)
	}
	cl := pinnedClient(t, b1.KafkaAddr, crashProducerOpts(60*time.Second)...)
	stop := make(chan struct{})
	p := startSeqProducer(ctx, cl, topic, 1, partitions, 40000, stop)

	jobsDone := func(b *floetest.Process) float64 {
		n, err := floetest.Metric(b.HTTPAddr, "floe_tiered_jobs_total", `outcome="completed"`)
		if err != nil {
			return 0
		}
		return n
	}
	// Kill the job runner twice, each time right after it completed a job
	// (the next one is under way).
	for round := range 2 {
		testkit.CheckFor(t, 30*time.Second, 5*time.Millisecond, func() error {
			if n := jobsDone(b2); n < 2 {
				return fmt.Errorf("broker 2 completed %v jobs", n)
			}
			return nil
		})
		b2.Kill()
		t.Logf("round %d: killed broker 2 after %d acks", round, p.ackCount())
		b2 = c.AddBroker(2)
	}
	// Kill the coordinator while jobs run: a segment uploaded but not yet
	// swapped is left behind for the collector.
	testkit.CheckFor(t, 30*time.Second, 5*time.Millisecond, func() error {
		if n := jobsDone(b2); n < 1 {
			return fmt.Errorf("broker 2 completed %v jobs", n)
		}
		return nil
	})
	c.Coord.Kill()
	t.Logf("killed the coordinator after %d acks", p.ackCount())
	c.StartCoordinator()
	p.waitAcks(t, p.ackCount()+2000, 60*time.Second)
	close(stop)
	sent, acked, failed := p.wait(t)
	t.Logf("producer: %d sent, %d acknowledged, %d failed", sent, acked, failed)
	if failed > 0 {
		t.Errorf("%d records failed: %v", failed, p.firstFailures(5))
	}
	waitConsolidated(t, c, topic, partitions, time.Minute)
	// Metadata names the restarted broker 2 (and no stale registration)
	// before the read-back's ListOffsets is sharded by leader.
	waitBrokers(t, b1.KafkaAddr, []int32{1, 2}, 30*time.Second)

	where := readBack(t, ctx, b1.KafkaAddr, topic, partitions)
	if unacked := checkExactlyOnce(t, where, p); unacked != 0 {
		t.Errorf("%d records in the log were not acknowledged", unacked)
	}
	if len(where) != sent {
		t.Errorf("%d distinct records in the log, %d sent", len(where), sent)
	}

	// After the grace, the bucket's segments are exactly the ones the
	// coordinator references, and no WAL object is left.
	store := c.MinIO.Store(t)
	testkit.CheckFor(t, 30*time.Second, 200*time.Millisecond, func() error {
		known, err := floetest.Metric(c.Coord.HTTPAddr, "floe_partition_segments", fmt.Sprintf(`topic="%s"`, topic))
		if err != nil {
			return err
		}
		segs, wal := bucketKeys(t, store, "tiered/"), bucketKeys(t, store, "wal/")
		if float64(len(segs)) != known || len(wal) != 0 {
			return fmt.Errorf("bucket holds %d segments (coordinator references %v) and %d WAL objects", len(segs), known, len(wal))
		}
		return nil
	})
}

// TestTieredKVGate looks up keys before and after their records move into
// segments. A broker with default flags answers each key the same way
// both times (200, the same value, partition and offset: read back through
// its cache from the segment), so a /kv example keeps working past
// --wal-retention; one started with --kv-remote-read-enabled=false answers
// 404 with error code 40405 once the records are in segments.
func TestTieredKVGate(t *testing.T) {
	c := tierCluster(t, 0, 10*time.Second, "--kv-index-enabled")
	gated := c.AddBroker(1, "--kv-index-enabled", "--kv-remote-read-enabled=false")
	open := c.AddBroker(2, "--kv-index-enabled") // remote reads on by default
	ctx := context.Background()
	adm := kadm.NewClient(pinnedClient(t, gated.KafkaAddr))
	const topic = "tier-kv"
	// An hour in the WAL tier at first: every lookup reads a WAL object.
	if _, err := adm.CreateTopic(ctx, 2, -1, map[string]*string{
		"cleanup.policy": kadm.StringPtr("compact"), "kv.index.enabled": kadm.StringPtr("true"),
		"local.retention.ms": kadm.StringPtr("3600000"),
	}, topic); err != nil {
		t.Fatal(err)
	}
	cl := pinnedClient(t, gated.KafkaAddr)
	var recs []*kgo.Record
	for i := range 200 {
		recs = append(recs, &kgo.Record{Topic: topic, Key: fmt.Appendf(nil, "key-%03d", i%50), Value: fmt.Appendf(nil, "value-%d", i)})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	keys := []int{0, 17, 49}
	before := map[int]kvAnswer{}
	for _, k := range keys {
		path := fmt.Sprintf("/kv/%s/key-%03d", topic, k)
		want := fmt.Sprintf("value-%d", 150+k) // the key's last record
		for _, b := range []*floetest.Process{open, gated} {
			if a := kvGet(t, b.HTTPAddr, path); a.status != 200 || string(a.value) != want {
				t.Fatalf("in the WAL tier: GET %s = %d %q (%d %s), want 200 %q", path, a.status, a.value, a.errorCode, a.message, want)
			}
		}
		before[k] = kvGet(t, open.HTTPAddr, path)
	}

	// Now consolidate everything into segments, as --wal-retention does
	// after 10 minutes.
	alterTopicConfigs(t, ctx, adm, topic, "local.retention.ms", "1")
	waitConsolidated(t, c, topic, 2, time.Minute)

	for _, k := range keys {
		path := fmt.Sprintf("/kv/%s/key-%03d", topic, k)
		if a := kvGet(t, open.HTTPAddr, path); a.status != 200 || string(a.value) != string(before[k].value) ||
			a.partition != before[k].partition || a.offset != before[k].offset {
			t.Errorf("default flags, in segments: GET %s = %d %q at %d/%d (%d %s), want 200 %q at %d/%d as from the WAL",
				path, a.status, a.value, a.partition, a.offset, a.errorCode, a.message,
				before[k].value, before[k].partition, before[k].offset)
		}
		a := kvGet(t, gated.HTTPAddr, path)
		if a.status != 404 || a.errorCode != 40405 || a.message != "record only available in tiered storage" {
			t.Errorf("--kv-remote-read-enabled=false: GET %s = %d, code %d %q, want 404 40405", path, a.status, a.errorCode, a.message)
		}
	}
	// A key never written is 40404 either way.
	for _, b := range []*floetest.Process{open, gated} {
		if a := kvGet(t, b.HTTPAddr, "/kv/"+topic+"/nope"); a.status != 404 || a.errorCode != 40404 {
			t.Errorf("absent key: %d %d", a.status, a.errorCode)
		}
	}
}

// TestTieredEmbeddedKVRebuild runs consolidation on the embedded default
// (coordinator, NATS and the job runner in one process), then rebuilds a
// topic's key index from a log that lives only in segments, while
// compaction (which asks the index for each key's latest offset) goes on:
// every key answers its latest value, read back from its segment.
func TestTieredEmbeddedKVRebuild(t *testing.T) {
	n := floetest.StartNode(t, node.Config{
		DataDir:     t.TempDir(),
		Coordinator: coordinator.Options{KVIndexEnabled: true, TierInterval: 100 * time.Millisecond},
		Tier:        tiered.ConsolidatorOptions{PollInterval: 50 * time.Millisecond},
	})
	ctx := context.Background()
	adm := newAdmin(t, n.KafkaAddr())
	const topic = "embedded-kv"
	if _, err := adm.CreateTopic(ctx, 2, -1, map[string]*string{
		"cleanup.policy": kadm.StringPtr("compact"), "kv.index.enabled": kadm.StringPtr("true"),
		"local.retention.ms": kadm.StringPtr("200"),
	}, topic); err != nil {
		t.Fatal(err)
	}
	cl := pinnedClient(t, n.KafkaAddr())
	// Ten produces, so that consolidation writes several segments and
	// compaction, which asks the key index, runs while it is rebuilt.
	for c := range 10 {
		var recs []*kgo.Record
		for i := c * 30; i < c*30+30; i++ {
			recs = append(recs, &kgo.Record{Topic: topic, Key: fmt.Appendf(nil, "k-%02d", i%60), Value: fmt.Appendf(nil, "v-%d", i)})
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	testkit.CheckFor(t, 30*time.Second, 50*time.Millisecond, func() error {
		wal, err := floetest.Metric(n.HTTPAddr(), "floe_partition_wal_bytes", `topic="`+topic+`"`)
		if err == nil && wal != 0 {
			err = fmt.Errorf("%v bytes in the WAL tier", wal)
		}
		return err
	})
	if err := n.Coordinator().RebuildKVIndex(ctx, topic); err != nil {
		t.Fatal(err)
	}
	testkit.CheckFor(t, 30*time.Second, 20*time.Millisecond, func() error {
		for i := range 60 {
			path, want := fmt.Sprintf("/kv/%s/k-%02d", topic, i), fmt.Sprintf("v-%d", 240+i)
			if a := kvGet(t, n.HTTPAddr(), path); a.status != 200 || string(a.value) != want {
				return fmt.Errorf("GET %s = %d %q (%d %s), want %q", path, a.status, a.value, a.errorCode, a.message, want)
			}
		}
		return nil
	})
}
