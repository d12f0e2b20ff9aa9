package e2e

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/floe-io/floe/internal/testkit/floetest"
)

// BenchmarkTieredCatchUp measures, in one run, a consumer catching up on
// one partition of an 8-partition topic from segment objects against the
// same from WAL objects: two topics get the same data (FLOE_BENCH_TIER_MIB,
// default 256 MiB each, of 1 KiB incompressible records round-robin over
// the partitions, through a broker rolling WAL objects at 8 MiB, so that
// every WAL object holds every partition); one is consolidated
// (local.retention.ms=1, segment.bytes 128 MiB), the other never
// (local.retention.ms=-1). Each round starts a fresh broker (an empty chunk
// cache) and reads partition 0 of each topic from offset 0, in alternating
// order, and reports per topic the wall time, MiB/s and the broker's
// object-store GETs per GiB read. It also reports the coordinator's
// metadata (the encoded batch coordinates, floe_partition_metadata_bytes)
// per GiB stored, before and after consolidation. Run with
// -benchtime 1x:
//
//	go test -run '^$' -bench TieredCatchUp -benchtime 1x ./e2e/
func BenchmarkTieredCatchUp(b *testing.B) {
	const (
		partitions = 8
		valueLen   = 1 << 10
	)
	totalMiB := benchEnvInt(b, "FLOE_BENCH_TIER_MIB", 256)
	rounds := benchEnvInt(b, "FLOE_BENCH_TIER_ROUNDS", 3)
	records := totalMiB << 20 / valueLen

	c := floetest.RunClusterWith(b, 0, floetest.ClusterOptions{
		CoordinatorArgs: []string{"--tier-interval", "500ms", "--consolidation-enabled=false"},
	})
	writer := c.AddBroker(1, "--ingest-max-bytes", strconv.Itoa(8<<20), "--consolidation-enabled=false")
	adm := newAdmin(b, writer.KafkaAddr)
	ctx := context.Background()
	for name, local := range map[string]string{"seg": "1", "wal": "-1"} {
		if _, err := adm.CreateTopic(ctx, partitions, -1, map[string]*string{
			"local.retention.ms": kadm.StringPtr(local), "retention.ms": kadm.StringPtr("-1"),
		}, name); err != nil {
			b.Fatal(err)
		}
	}
	start := time.Now()
	for _, topic := range []string{"seg", "wal"} {
		produceCatchUp(b, writer.KafkaAddr, topic, partitions, records, valueLen, 64<<10)
	}
	writer.Stop()
	meta := func(topic string) float64 {
		m, err := floetest.Metric(c.Coord.HTTPAddr, "floe_partition_metadata_bytes", `topic="`+topic+`"`)
		if err != nil {
			b.Fatal(err)
		}
		return m
	}
	stored := float64(totalMiB) / 1024 // GiB per topic
	before := meta("seg")
	fmt.Printf("produced %d MiB to each of two topics in %s; coordinates of one: %.0f bytes, %.0f per GiB (%.4f%% of the data)\n",
		totalMiB, time.Since(start).Round(time.Millisecond), before, before/stored, 100*before/float64(totalMiB<<20))

	// Consolidate "seg": restart the coordinator with consolidation on, and
	// a broker to run the jobs.
	c.Coord.Stop()
	c.StartCoordinatorWith("--consolidation-enabled=true")
	jobs := c.AddBroker(2, "--tier-poll-interval", "100ms")
	consStart := time.Now()
	waitConsolidated(b, c, "seg", partitions, 10*time.Minute)
	jobs.Stop()
	fmt.Printf("consolidated in %s\n", time.Since(consStart).Round(time.Millisecond))
	after := meta("seg")
	fmt.Printf("after consolidation: %.0f bytes, %.0f per GiB (%.5f%% of the data); the unconsolidated topic: %.0f bytes\n",
		after, after/stored, 100*after/float64(totalMiB<<20), meta("wal"))
	b.ReportMetric(after/stored, "seg-metadata-B/GiB")
	b.ReportMetric(before/stored, "wal-metadata-B/GiB")

	type result struct {
		wall time.Duration
		gets float64
	}
	runs := map[string][]result{}
	partMiB := float64(totalMiB) / partitions
	b.ResetTimer()
	id := 10
	for round := range rounds {
		order := []string{"seg", "wal"}
		if round%2 == 1 {
			slices.Reverse(order)
		}
		for _, topic := range order {
			id++
			p := c.AddBroker(id)
			gets0, _ := floetest.Metric(p.HTTPAddr, "floe_objectstore_requests_total", `op="get"`)
			wall := consumePartition(b, p.KafkaAddr, topic, 0, records/partitions)
			gets, err := floetest.Metric(p.HTTPAddr, "floe_objectstore_requests_total", `op="get"`)
			if err != nil {
				b.Fatal(err)
			}
			p.Stop()
			r := result{wall, gets - gets0}
			runs[topic] = append(runs[topic], r)
			fmt.Printf("round %d %s: %s, %.1f MiB/s, %.0f GETs (%.0f per GiB)\n", round, topic, wall.Round(time.Millisecond),
				partMiB/wall.Seconds(), r.gets, r.gets/(partMiB/1024))
		}
	}
	b.StopTimer()
	for _, topic := range []string{"seg", "wal"} {
		var wall time.Duration
		var gets float64
		for _, r := range runs[topic] {
			wall, gets = wall+r.wall, gets+r.gets
		}
		n := float64(len(runs[topic]))
		mean := wall / time.Duration(len(runs[topic]))
		b.Logf("%s: mean of %d: %s, %.1f MiB/s, %.0f GETs per GiB", topic, len(runs[topic]), mean.Round(time.Millisecond),
			partMiB/mean.Seconds(), gets/n/(partMiB/1024))
		b.ReportMetric(partMiB/mean.Seconds(), topic+"-MiB/s")
		b.ReportMetric(gets/n/(partMiB/1024), topic+"-GETs/GiB")
	}
}

// consumePartition reads want records of one partition from offset 0
// through addr and returns the time it took.
func consumePartition(b *testing.B, addr, topic string, partition int32, want int) time.Duration {
	b.Helper()
	cl := pinnedClient(b, addr, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {partition: kgo.NewOffset().AtStart()}}))
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	start := time.Now()
	got := 0
	for got < want {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			b.Fatalf("consumed %d of %d records: %v", got, want, err)
		}
		fs.EachError(func(t string, p int32, err error) { b.Fatalf("fetch %s/%d: %v", t, p, err) })
		got += fs.NumRecords()
	}
	return time.Since(start)
}
