package e2e

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/floe-io/floe/internal/testkit/floetest"
)

// BenchmarkZoneCacheSharing measures, in one run, what per-zone chunk
// sharing saves: FLOE_BENCH_ZONE_MIB (default 256) of 1 KiB records are
// produced through a broker of zone b to an 8-partition topic, then three
// consumer groups of zone a each read all of it through a different one of
// zone a's three brokers (pinned connections: every fetch goes to that
// broker), first with --zone-cache-sharing=false and then, on a fresh
// cluster, with it on. It reports the object-store GETs per GiB consumed
// by each group, against the chunks the data spans (one GET per chunk per
// zone is the floor), and the chunk loads by source. Run with -benchtime
// 1x:
//
//	go test -run '^$' -bench ZoneCacheSharing -benchtime 1x ./e2e/
func BenchmarkZoneCacheSharing(b *testing.B) {
	const (
		partitions = 8
		valueLen   = 1 << 10
		chunk      = 4 << 20
	)
	totalMiB := benchEnvInt(b, "FLOE_BENCH_ZONE_MIB", 256)
	records := totalMiB << 20 / valueLen
	for _, sharing := range []bool{false, true} {
		c := floetest.RunClusterWith(b, 0, floetest.ClusterOptions{})
		flag := "--zone-cache-sharing=" + strconv.FormatBool(sharing)
		readers := []*floetest.Process{c.AddBroker(1, "--rack", "a", flag), c.AddBroker(2, "--rack", "a", flag), c.AddBroker(3, "--rack", "a", flag)}
		writer := c.AddBroker(4, "--rack", "b", flag, "--ingest-max-bytes", strconv.Itoa(8<<20))
		waitBrokers(b, writer.KafkaAddr, []int32{1, 2, 3, 4}, 30*time.Second)
		adm := newAdmin(b, writer.KafkaAddr)
		if _, err := adm.CreateTopic(context.Background(), partitions, -1, map[string]*string{"retention.ms": kadm.StringPtr("-1")}, "zoned"); err != nil {
			b.Fatal(err)
		}
		produceCatchUp(b, writer.KafkaAddr, "zoned", partitions, records, valueLen, 64<<10)
		// The chunks the data spans: each object's size in chunks, rounded
		// up (the coordinator's live objects are the WAL objects written).
		objs, err := floetest.Metric(c.Coord.HTTPAddr, "floe_coordinator_objects", `state="live"`)
		if err != nil {
			b.Fatal(err)
		}
		objBytes, err := floetest.Metric(c.Coord.HTTPAddr, "floe_coordinator_object_bytes", `state="live"`)
		if err != nil {
			b.Fatal(err)
		}
		chunks := math.Ceil(objBytes/objs/chunk) * objs
		fmt.Printf("sharing=%t: %d MiB in %.0f objects of %.1f MiB on average: %.0f chunks\n", sharing, totalMiB, objs, objBytes/objs/(1<<20), chunks)
		gets := func() float64 {
			var n float64
			for _, p := range readers {
				v, _ := floetest.Metric(p.HTTPAddr, "floe_objectstore_requests_total", `op="get"`)
				n += v
			}
			return n
		}
		before := gets()
		start := time.Now()
		for i, p := range readers {
			cl := pinnedClient(b, p.KafkaAddr, kgo.ConsumeTopics("zoned"), kgo.ConsumerGroup(fmt.Sprintf("zone-a-%d", i)),
				kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.Rack("a"), kgo.FetchMaxBytes(64<<20))
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			for got := 0; got < records; {
				fs := cl.PollFetches(ctx)
				if ctx.Err() != nil {
					b.Fatalf("group %d read %d of %d records", i, got, records)
				}
				got += fs.NumRecords()
			}
			cancel()
			cl.Close()
		}
		wall := time.Since(start)
		n := gets() - before
		var loads [3]float64
		for i, src := range []string{"object_store", "peer", "peer_fallback"} {
			for _, p := range readers {
				v, _ := floetest.Metric(p.HTTPAddr, "floe_cache_chunk_loads_total", `source="`+src+`"`)
				loads[i] += v
			}
		}
		gib := float64(totalMiB) / 1024
		fmt.Printf("sharing=%t: three groups read %d MiB each through three brokers of zone a in %s: %.0f GETs for %.0f chunks (%.2f per chunk), %.0f GETs per GiB consumed; chunk loads: %.0f from the store, %.0f from peers, %.0f fallbacks\n",
			sharing, totalMiB, wall.Round(time.Millisecond), n, chunks, n/chunks, n/(3*gib), loads[0], loads[1], loads[2])
		name := "unshared"
		if sharing {
			name = "shared"
		}
		b.ReportMetric(n/chunks, name+"-GETs/chunk")
		b.ReportMetric(n/(3*gib), name+"-GETs/GiB")
		for _, p := range append(readers, writer) {
			p.Stop()
		}
	}
}
