package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/floe-io/floe/internal/testkit"
	"github.com/floe-io/floe/internal/testkit/floetest"
)

// zoneOf is the zone of broker node id (1-6): two brokers a zone.
func zoneOf(id int32) string { return string(rune('a' + (id-1)/2)) }

// zoneBytes sums, over the brokers, floe_kafka_zone_bytes_total in one
// direction for clients of clientZone, split into the bytes served by a
// broker of the same zone and by the others.
func zoneBytes(t *testing.T, brokers map[int32]*floetest.Process, direction, clientZone string) (local, cross float64) {
	t.Helper()
	for id, b := range brokers {
		v, err := floetest.Metric(b.HTTPAddr, "floe_kafka_zone_bytes_total", `direction="`+direction+`"`, `client_zone="`+clientZone+`"`)
		if err != nil {
			continue // no such bytes on this broker
		}
		if zoneOf(id) == clientZone {
			local += v
		} else {
			cross += v
		}
	}
	return local, cross
}

// TestZones runs six brokers in three zones (--rack a, b, c; two each) on
// MinIO and clients tagged by each of the three mechanisms: client.id
// "floe_az=<zone>", client.id "diskless_az=<zone>" (Inkless's) and
// client.rack (Fetch's rack id, franz-go's Rack and librdkafka's
// client.rack). Metadata names every leader in the client's zone; a
// producer per zone and a consumer group per zone move all their record
// bytes within their zone (librdkafka's consumer included); an untagged
// client's bytes cross zones as before; and when a zone loses its brokers,
// its clients fall back to the others.
func TestZones(t *testing.T) {
	c := floetest.RunClusterWith(t, 0, floetest.ClusterOptions{})
	brokers := map[int32]*floetest.Process{}
	var ids []int32
	for id := int32(1); id <= 6; id++ {
		brokers[id] = c.AddBroker(int(id), "--rack", zoneOf(id))
		ids = append(ids, id)
	}
	seed := func(zone string) string { return brokers[int32(zone[0]-'a')*2+1].KafkaAddr }
	waitBrokers(t, brokers[1].KafkaAddr, ids, 30*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const topic, partitions = "zoned", 12
	adm := kadm.NewClient(newFranzClient(t, seed("a")))
	if _, err := adm.CreateTopic(ctx, partitions, -1, nil, topic); err != nil {
		t.Fatal(err)
	}

	// Metadata: every leader in the client's zone, spread over both of its
	// brokers; an untagged client gets leaders everywhere.
	leadersFor := func(opts ...kgo.Opt) map[int32]int {
		t.Helper()
		cl := newFranzClient(t, seed("a"), opts...)
		md, err := kadm.NewClient(cl).Metadata(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		out := map[int32]int{}
		for _, p := range md.Topics[topic].Partitions {
			out[p.Leader]++
		}
		return out
	}
	for _, zone := range []string{"a", "b", "c"} {
		for _, id := range []string{"app,floe_az=" + zone, "diskless_az=" + zone} {
			got := leadersFor(kgo.ClientID(id))
			if len(got) != 2 {
				t.Errorf("client.id %q: leaders %v, want both brokers of zone %s", id, got, zone)
			}
			for l := range got {
				if zoneOf(l) != zone {
					t.Errorf("client.id %q: leader %d is in zone %s", id, l, zoneOf(l))
				}
			}
		}
	}
	if got := leadersFor(); len(got) != 6 {
		t.Errorf("untagged client: leaders %v, want all six brokers", got)
	}

	// A producer per zone (client.id is a producer's only way to say it),
	// 300 records of 1 KiB each.
	const perZone = 300
	value := strings.Repeat("z", 1024)
	producerIDs := map[string]string{"a": "producer,floe_az=a", "b": "producer,diskless_az=b", "c": "floe_az=c"}
	for zone, id := range producerIDs {
		cl := newFranzClient(t, seed(zone), kgo.ClientID(id), kgo.DefaultProduceTopic(topic), kgo.ProducerBatchCompression(kgo.NoCompression()))
		var recs []*kgo.Record
		for i := range perZone {
			recs = append(recs, &kgo.Record{Key: fmt.Appendf(nil, "%s-%d", zone, i), Value: []byte(value)})
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("producer of zone %s: %v", zone, err)
		}
	}
	// A consumer group per zone: a by client.rack alone (its fetches start
	// wherever Metadata led, and are redirected), b by client.id, c by
	// both.
	consumerOpts := map[string][]kgo.Opt{
		"a": {kgo.Rack("a")},
		"b": {kgo.ClientID("consumer,diskless_az=b")},
		"c": {kgo.ClientID("floe_az=c"), kgo.Rack("c")},
	}
	total := 3 * perZone
	for zone, opts := range consumerOpts {
		cl := newFranzClient(t, seed(zone), append(opts, kgo.ConsumeTopics(topic), kgo.ConsumerGroup("group-"+zone),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
		got := 0
		for got < total {
			fs := cl.PollFetches(ctx)
			if ctx.Err() != nil {
				t.Fatalf("group of zone %s: %d of %d records", zone, got, total)
			}
			fs.EachError(func(tp string, p int32, err error) {
				if !kerr.IsRetriable(err) { // the client retries the others
					t.Fatalf("group of zone %s: fetch %s/%d: %v", zone, tp, p, err)
				}
			})
			got += fs.NumRecords()
		}
		cl.Close()
	}
	// librdkafka's consumer with client.rack: redirected likewise.
	out, stderr := runKcat(t, 60*time.Second, "", "-C", "-b", seed("b"), "-t", topic, "-o", "beginning", "-e", "-q",
		"-X", "client.rack=b", "-X", "client.id=kcat-untagged-id", "-f", "%k\n")
	checkKcatStderr(t, stderr)
	if n := len(strings.Fields(out)); n != total {
		t.Errorf("kcat read %d records, want %d", n, total)
	}

	testkit.CheckFor(t, 10*time.Second, 100*time.Millisecond, func() error {
		for _, zone := range []string{"a", "b", "c"} {
			for _, dir := range []string{"in", "out"} {
				local, cross := zoneBytes(t, brokers, dir, zone)
				want := float64(perZone * 1024)
				if dir == "out" {
					want = float64(total * 1024) // one group
					if zone == "b" {
						want *= 2 // and kcat
					}
				}
				if cross != 0 || local < want {
					return fmt.Errorf("zone %s %s: %.0f bytes within the zone, %.0f across (want at least %.0f within, none across)", zone, dir, local, cross, want)
				}
			}
		}
		return nil
	})
	// Untagged, for the record: a consumer that names no zone reads from
	// leaders everywhere, two thirds of its bytes across zones.
	plain := newFranzClient(t, seed("a"), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	for got := 0; got < total; {
		fs := plain.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatal("untagged consumer: deadline")
		}
		got += fs.NumRecords()
	}
	plain.Close()
	// Seeded in zone a: the bytes the other zones' brokers served it
	// would cross a zone.
	var untaggedA, untaggedOther float64
	for id, b := range brokers {
		v, _ := floetest.Metric(b.HTTPAddr, "floe_kafka_zone_bytes_total", `direction="out"`, `client_zone="unknown"`)
		if zoneOf(id) == "a" {
			untaggedA += v
		} else {
			untaggedOther += v
		}
	}
	t.Logf("untagged consumer in zone a: %.0f bytes from zone a's brokers, %.0f (%.0f%%) from the other zones'",
		untaggedA, untaggedOther, 100*untaggedOther/(untaggedA+untaggedOther))

	// Zone c loses both brokers: its clients fall back to the others.
	brokers[5].Stop()
	brokers[6].Stop()
	delete(brokers, 5)
	delete(brokers, 6)
	waitBrokers(t, brokers[1].KafkaAddr, []int32{1, 2, 3, 4}, 30*time.Second)
	got := leadersFor(kgo.ClientID("floe_az=c"))
	if len(got) != 4 {
		t.Errorf("zone c without brokers: leaders %v, want the four left", got)
	}
	cl := newFranzClient(t, seed("a"), kgo.ClientID("floe_az=c"), kgo.DefaultProduceTopic(topic))
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("after zone c went")}).FirstErr(); err != nil {
		t.Errorf("producer of zone c after its brokers went: %v", err)
	}
}
