package e2e

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
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
// cache) and reads partition 0 of each topic from offset 0, and the whole
// consolidated topic ("seg-topic"), in alternating order, and reports per
// read the wall time, MiB/s and the broker's object-store GETs per GiB
// read. FLOE_S3_PROFILE=s3-standard puts S3's latency in front of MinIO. It also reports the coordinator's
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
	// Each round reads partition 0 of each topic, and the whole
	// consolidated topic (all partitions at once, as a consumer catching
	// up on a topic does: a fetch returns up to 1 MiB a partition, so one
	// partition alone is bound by the fetch round trip, not the store).
	type read struct {
		name, topic string
		whole       bool
		mib         float64
	}
	partMiB := float64(totalMiB) / partitions
	reads := []read{{"seg", "seg", false, partMiB}, {"wal", "wal", false, partMiB}, {"seg-topic", "seg", true, float64(totalMiB)}}
	runs := map[string][]result{}
	b.ResetTimer()
	id := 10
	for round := range rounds {
		order := slices.Clone(reads)
		if round%2 == 1 {
			slices.Reverse(order)
		}
		for _, rd := range order {
			id++
			p := c.AddBroker(id)
			gets0, _ := floetest.Metric(p.HTTPAddr, "floe_objectstore_requests_total", `op="get"`)
			var wall time.Duration
			if rd.whole {
				wall = consumeTopic(b, p.KafkaAddr, rd.topic, records)
			} else {
				wall = consumePartition(b, p.KafkaAddr, rd.topic, 0, records/partitions)
			}
			gets, err := floetest.Metric(p.HTTPAddr, "floe_objectstore_requests_total", `op="get"`)
			if err != nil {
				b.Fatal(err)
			}
			var cacheLine string
			for _, m := range []string{"floe_cache_gets_total", "floe_cache_misses_total", "floe_cache_read_aheads_total", "floe_cache_evictions_total", "floe_objectstore_hedges_total"} {
				v, _ := floetest.Metric(p.HTTPAddr, m, "")
				cacheLine += fmt.Sprintf(" %s=%.0f", strings.TrimSuffix(strings.TrimPrefix(m, "floe_"), "_total"), v)
			}
			p.Stop()
			r := result{wall, gets - gets0}
			runs[rd.name] = append(runs[rd.name], r)
			fmt.Printf("round %d %s: %s, %.1f MiB/s, %.0f GETs (%.0f per GiB);%s\n", round, rd.name, wall.Round(time.Millisecond),
				rd.mib/wall.Seconds(), r.gets, r.gets/(rd.mib/1024), cacheLine)
		}
	}
	b.StopTimer()
	for _, rd := range reads {
		var wall time.Duration
		var gets float64
		for _, r := range runs[rd.name] {
			wall, gets = wall+r.wall, gets+r.gets
		}
		n := float64(len(runs[rd.name]))
		mean := wall / time.Duration(len(runs[rd.name]))
		b.Logf("%s: mean of %d: %s, %.1f MiB/s, %.0f GETs per GiB", rd.name, len(runs[rd.name]), mean.Round(time.Millisecond),
			rd.mib/mean.Seconds(), gets/n/(rd.mib/1024))
		b.ReportMetric(rd.mib/mean.Seconds(), rd.name+"-MiB/s")
		b.ReportMetric(gets/n/(rd.mib/1024), rd.name+"-GETs/GiB")
	}
}

// consumeTopic reads want records of every partition of topic from the
// start through the broker at addr, and returns how long that took.
func consumeTopic(b *testing.B, addr, topic string, want int) time.Duration {
	b.Helper()
	return consumeTimed(b, addr, want, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
}

// consumePartition reads want records of one partition from offset 0
// through addr and returns the time it took.
func consumePartition(b *testing.B, addr, topic string, partition int32, want int) time.Duration {
	b.Helper()
	return consumeTimed(b, addr, want, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {partition: kgo.NewOffset().AtStart()}}))
}

// consumeTimed reads want records with a client on addr consuming what
// opts say, and returns the time it took.
func consumeTimed(b *testing.B, addr string, want int, opts ...kgo.Opt) time.Duration {
	b.Helper()
	cl := pinnedClient(b, addr, opts...)
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
