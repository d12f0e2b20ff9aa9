package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/floe-io/floe/internal/testkit"
	"github.com/floe-io/floe/internal/testkit/floetest"
)

// BenchmarkCompaction measures one compaction of a partition in one run:
// FLOE_BENCH_COMPACT_MIB (default 1024) of 1 KiB incompressible values
// over FLOE_BENCH_COMPACT_KEYS keys (default 10,000: 100 overwrites each
// at 1 GiB), produced to a one-partition compacted topic
// (FLOE_BENCH_COMPACT_INDEXED=1: with the key index; segment.bytes
// FLOE_BENCH_COMPACT_SEGMENT_MIB, default 64) and consolidated into
// segments with compaction held off (min.compaction.lag.ms at a
// day). It then reads the partition from offset 0 through a fresh broker
// (the consumer bootstrapping the table), lets compaction run on a fresh
// broker started for it (--compaction-dedupe-buffer-bytes
// FLOE_BENCH_COMPACT_BUFFER_MIB, default 32, and a 32 MiB chunk cache) by setting
// min.compaction.lag.ms to 0, and reports the compaction's wall time and
// MiB/s (from the alter to a clean partition), the bytes after it against
// the live set (a record per key), the compacting broker's peak RSS
// (VmHWM) and its rise over the idle broker's, and the same consumer's
// read from offset 0 after. Run with -benchtime 1x:
//
//	go test -run '^$' -bench Compaction -benchtime 1x ./e2e/
func BenchmarkCompaction(b *testing.B) {
	const valueLen = 1 << 10
	totalMiB := benchEnvInt(b, "FLOE_BENCH_COMPACT_MIB", 1024)
	keys := benchEnvInt(b, "FLOE_BENCH_COMPACT_KEYS", 10000)
	bufferMiB := benchEnvInt(b, "FLOE_BENCH_COMPACT_BUFFER_MIB", 32)
	indexed := os.Getenv("FLOE_BENCH_COMPACT_INDEXED") == "1"
	segmentMiB := benchEnvInt(b, "FLOE_BENCH_COMPACT_SEGMENT_MIB", 64)
	records := totalMiB << 20 / valueLen

	coordArgs := []string{"--tier-interval", "500ms"}
	brokerArgs := []string{"--tier-poll-interval", "100ms"}
	if indexed {
		coordArgs = append(coordArgs, "--kv-index-enabled")
		brokerArgs = append(brokerArgs, "--kv-index-enabled")
	}
	c := floetest.RunClusterWith(b, 0, floetest.ClusterOptions{CoordinatorArgs: coordArgs, BrokerArgs: brokerArgs})
	// Objects roll at 4 MiB, below what the producer keeps in flight
	// (five 1 MiB batches), so that one partition is not held to a
	// linger per request.
	writer := c.AddBroker(1, "--consolidation-enabled=false", "--ingest-max-bytes", strconv.Itoa(4<<20))
	adm := newAdmin(b, writer.KafkaAddr)
	ctx := context.Background()
	const topic = "compacted"
	configs := map[string]*string{
		"cleanup.policy": kadm.StringPtr("compact"), "local.retention.ms": kadm.StringPtr("1"),
		"min.compaction.lag.ms": kadm.StringPtr("86400000"), "segment.bytes": kadm.StringPtr(strconv.Itoa(segmentMiB << 20)),
	}
	if indexed {
		configs["kv.index.enabled"] = kadm.StringPtr("true")
	}
	if resp, err := adm.CreateTopic(ctx, 1, -1, configs, topic); err != nil || resp.Err != nil {
		b.Fatalf("create topic: %v %v", err, resp.Err)
	}
	start := time.Now()
	produceKeyed(b, writer.KafkaAddr, topic, records, keys, valueLen)
	fmt.Printf("produced %d MiB (%d records over %d keys, indexed=%t) in %s\n", totalMiB, records, keys, indexed, time.Since(start).Round(time.Millisecond))

	cons := c.AddBroker(2)
	consStart := time.Now()
	waitConsolidated(b, c, topic, 1, 10*time.Minute)
	cons.Stop()
	metric := func(name string) float64 {
		v, err := floetest.Metric(c.Coord.HTTPAddr, name, `topic="`+topic+`"`)
		if err != nil {
			b.Fatal(err)
		}
		return v
	}
	before := metric("floe_partition_segment_bytes")
	fmt.Printf("consolidated in %s: %.1f MiB in %v segments\n", time.Since(consStart).Round(time.Millisecond), before/(1<<20), metric("floe_partition_segments"))

	readBefore := c.AddBroker(3)
	n0, wall0 := consumeToEnd(b, readBefore.KafkaAddr, topic)
	readBefore.Stop()
	fmt.Printf("before: a consumer from offset 0 read %d records in %s (%.1f MiB/s)\n", n0, wall0.Round(time.Millisecond), before/(1<<20)/wall0.Seconds())

	b.ResetTimer()
	// A small chunk cache, so that the RSS rise is the compactor's, not
	// the input segments' chunks kept for later readers.
	compactor := c.AddBroker(4, "--compaction-dedupe-buffer-bytes", strconv.Itoa(bufferMiB<<20), "--cache-bytes", strconv.Itoa(32<<20))
	idle := peakRSS(b, compactor.PID())
	// The compactor's Go heap in use, sampled while it works: live data
	// and the garbage the next GC frees, without the pages the runtime
	// keeps for reuse that RSS counts.
	heapPeak := make(chan float64, 1)
	heapStop := make(chan struct{})
	go func() {
		var peak float64
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-heapStop:
				heapPeak <- peak
				return
			case <-t.C:
			}
			if v, err := floetest.Metric(compactor.HTTPAddr, "go_memstats_heap_inuse_bytes"); err == nil {
				peak = max(peak, v)
			}
		}
	}()
	compStart := time.Now()
	// Lag 0 lets compaction start; a dirty ratio near 0 lets a pass over
	// a full key map be followed by the next until the partition is clean
	// (at the default 0.5 the passes stop once the dirty part is below
	// the clean one, as Kafka's cleaner does).
	alterTopicConfigs(b, ctx, adm, topic, "min.compaction.lag.ms", "0", "min.cleanable.dirty.ratio", "0.01")
	testkit.CheckFor(b, 30*time.Minute, 100*time.Millisecond, func() error {
		passes, err := floetest.Metric(c.Coord.HTTPAddr, "floe_coordinator_compaction_passes_total")
		if err != nil {
			return err
		}
		dirty, err := floetest.Metric(c.Coord.HTTPAddr, "floe_partition_compaction_dirty_bytes", `topic="`+topic+`"`)
		if err != nil {
			return err
		}
		if passes < 1 || dirty > 0 {
			return fmt.Errorf("%v passes, %v dirty bytes", passes, dirty)
		}
		return nil
	})
	compWall := time.Since(compStart)
	b.StopTimer()
	close(heapStop)
	heap := <-heapPeak
	peak := peakRSS(b, compactor.PID())
	passes, _ := floetest.Metric(c.Coord.HTTPAddr, "floe_coordinator_compaction_passes_total")
	compactor.Stop()
	after := metric("floe_partition_segment_bytes")
	live := float64(keys) * float64(valueLen+recordOverhead(keys))
	fmt.Printf("compacted in %s over %v passes: %.1f MiB/s; %.2f MiB after (%.0f bytes), live set about %.2f MiB: %.3f×; compactor peak RSS %.1f MiB, %.1f MiB above idle, peak Go heap in use %.1f MiB\n",
		compWall.Round(time.Millisecond), passes, before/(1<<20)/compWall.Seconds(), after/(1<<20), after, live/(1<<20), after/live,
		float64(peak)/(1<<20), float64(peak-idle)/(1<<20), heap/(1<<20))

	readAfter := c.AddBroker(5)
	n1, wall1 := consumeToEnd(b, readAfter.KafkaAddr, topic)
	readAfter.Stop()
	fmt.Printf("after: a consumer from offset 0 read %d records in %s (before: %d in %s, %.1f× faster)\n",
		n1, wall1.Round(time.Millisecond), n0, wall0.Round(time.Millisecond), wall0.Seconds()/wall1.Seconds())
	if n1 != min(keys, records) {
		b.Errorf("after compaction %d records, want one per key (%d)", n1, keys)
	}
	b.ReportMetric(before/(1<<20)/compWall.Seconds(), "compact-MiB/s")
	b.ReportMetric(after/live, "after/live")
	b.ReportMetric(float64(peak)/(1<<20), "peak-RSS-MiB")
	b.ReportMetric(float64(peak-idle)/(1<<20), "RSS-rise-MiB")
	b.ReportMetric(heap/(1<<20), "heap-inuse-MiB")
	b.ReportMetric(wall0.Seconds(), "read-before-s")
	b.ReportMetric(wall1.Seconds(), "read-after-s")
}

// recordOverhead is the stored bytes a record adds to its value in a
// batch of many (its length, attributes, deltas, key and header count),
// plus its share of a batch header, about: the live set's size.
func recordOverhead(keys int) int { return len(benchKey(keys-1)) + 8 }

func benchKey(i int) string { return fmt.Sprintf("key-%07d", i) }

// produceKeyed produces records values of valueLen random bytes to
// partition 0 of topic, the i-th with key i % keys, in order, in 1 MiB
// batches.
func produceKeyed(b *testing.B, addr, topic string, records, keys, valueLen int) {
	b.Helper()
	produceRandom(b, addr, topic, records, valueLen, 1<<20, 64<<20, func(i int, v []byte) *kgo.Record {
		return &kgo.Record{Key: []byte(benchKey(i % keys)), Value: v}
	})
}

// consumeToEnd reads partition 0 of topic from offset 0 through addr up to
// the record at its end offset minus one (the latest of its key, never
// compacted away), and returns the records read and the time it took.
func consumeToEnd(b *testing.B, addr, topic string) (int, time.Duration) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cl := pinnedClient(b, addr, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchMaxBytes(64<<20), kgo.FetchMaxPartitionBytes(32<<20))
	defer cl.Close()
	listed, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		b.Fatal(err)
	}
	end := listed[topic][0].Offset
	start := time.Now()
	n, last := 0, int64(-1)
	for last < end-1 {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			b.Fatalf("read %d records, up to offset %d of %d: %v", n, last, end, err)
		}
		fs.EachError(func(t string, p int32, err error) { b.Fatalf("fetch %s/%d: %v", t, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			n++
			last = r.Offset
		})
	}
	return n, time.Since(start)
}

// peakRSS returns a process's peak resident set size (VmHWM) in bytes.
func peakRSS(b *testing.B, pid int) int64 {
	b.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return kb << 10
		}
	}
	b.Fatalf("no VmHWM in /proc/%d/status", pid)
	return 0
}
