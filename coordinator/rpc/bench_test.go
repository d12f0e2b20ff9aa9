package rpc_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/coordinator"
	"github.com/floe-io/floe/coordinator/rpc"
	"github.com/floe-io/floe/groups"
	"github.com/floe-io/floe/internal/testkit/natstest"
)

// benchAPI is what the benchmarks call: the coordinator itself ("direct"),
// or a client.
type benchAPI interface {
	CommitObject(ctx context.Context, req *coordapi.CommitRequest) (*coordapi.CommitResponse, error)
	Topic(ctx context.Context, name string) (coordapi.Topic, error)
}

// benchEnv is a coordinator, called directly or served over NATS to a
// client whose connection is in-process (as the embedded broker has it) or
// TCP on loopback (as a broker reaching cmd/coordinator has it).
func benchEnv(b *testing.B, transport string) (*coordinator.Coordinator, benchAPI) {
	b.Helper()
	ns := natstest.StartWith(b, &server.Options{})
	c, err := coordinator.Open(coordinator.Options{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	if transport == "direct" {
		return c, c
	}
	connect := func() *nats.Conn {
		var nc *nats.Conn
		var err error
		if transport == "inprocess" {
			nc, err = nats.Connect("", nats.InProcessServer(ns))
		} else {
			nc, err = nats.Connect(ns.ClientURL())
		}
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(nc.Close)
		return nc
	}
	srv, err := rpc.Serve(context.Background(), connect(), "bench", c, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(srv.Close)
	return c, rpc.NewClient(connect(), "bench", rpc.ClientOptions{})
}

var transports = []string{"direct", "inprocess", "tcp"}

// BenchmarkCommitRoundTrip commits one small batch per call: the latency a
// lone producer sees added by the coordinator (NATS round trip, encoding,
// Pebble sync).
func BenchmarkCommitRoundTrip(b *testing.B) {
	for _, tr := range transports {
		b.Run(tr, func(b *testing.B) {
			c, cl := benchEnv(b, tr)
			ctx := context.Background()
			tp, err := c.CreateTopic(ctx, coordapi.CreateTopicRequest{Name: "t", Partitions: 1, ReplicationFactor: -1})
			if err != nil {
				b.Fatal(err)
			}
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := range b.N {
				req := &coordapi.CommitRequest{ObjectKey: fmt.Sprintf("wal/%08d", i), ObjectSize: 1000, BrokerID: 1,
					Batches: []coordapi.CommitBatch{{TopicID: tp.ID, ByteLength: 1000, LastOffsetDelta: 9, ProducerID: -1}}}
				start := time.Now()
				if _, err := cl.CommitObject(ctx, req); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
			}
			b.StopTimer()
			reportPercentiles(b, lat)
		})
	}
}

// BenchmarkTopicRoundTrip is the NATS round trip alone: a Topic lookup
// served from the coordinator's memory.
func BenchmarkTopicRoundTrip(b *testing.B) {
	for _, tr := range transports {
		b.Run(tr, func(b *testing.B) {
			c, cl := benchEnv(b, tr)
			ctx := context.Background()
			if _, err := c.CreateTopic(ctx, coordapi.CreateTopicRequest{Name: "t", Partitions: 1, ReplicationFactor: -1}); err != nil {
				b.Fatal(err)
			}
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for range b.N {
				start := time.Now()
				if _, err := cl.Topic(ctx, "t"); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
			}
			b.StopTimer()
			reportPercentiles(b, lat)
		})
	}
}

// BenchmarkCommitObject1600x600 is coordinator.BenchmarkCommitObject1600x600
// over NATS: objects of 1,600 idempotent batches spread over 600 partitions.
func BenchmarkCommitObject1600x600(b *testing.B) {
	const (
		topics, partsPerTopic = 6, 100
		batches               = 1600
		producers             = 100
		batchBytes            = 5000
	)
	for _, tr := range transports {
		b.Run(tr, func(b *testing.B) {
			c, cl := benchEnv(b, tr)
			ctx := context.Background()
			var ids []coordapi.TopicID
			for i := range topics {
				tp, err := c.CreateTopic(ctx, coordapi.CreateTopicRequest{Name: fmt.Sprintf("bench-%d", i),
					Partitions: partsPerTopic, ReplicationFactor: -1})
				if err != nil {
					b.Fatal(err)
				}
				ids = append(ids, tp.ID)
			}
			type prodPart struct {
				pid  int64
				part int
			}
			nextSeq := map[prodPart]int32{}
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := range b.N {
				req := &coordapi.CommitRequest{ObjectKey: fmt.Sprintf("wal/%08d", i), ObjectSize: batches * batchBytes, BrokerID: 1,
					Batches: make([]coordapi.CommitBatch, batches)}
				for j := range req.Batches {
					part := (i*batches + j) % (topics * partsPerTopic)
					pid := int64(part % producers)
					k := prodPart{pid, part}
					req.Batches[j] = coordapi.CommitBatch{
						TopicID: ids[part/partsPerTopic], Partition: int32(part % partsPerTopic),
						ByteOffset: int64(j * batchBytes), ByteLength: batchBytes,
						LastOffsetDelta: 9, MaxTimestamp: 1_700_000_000_000 + int64(i),
						ProducerID: pid, ProducerEpoch: 0, BaseSequence: nextSeq[k],
					}
					nextSeq[k] += 10
				}
				start := time.Now()
				resp, err := cl.CommitObject(ctx, req)
				lat = append(lat, time.Since(start))
				if err != nil {
					b.Fatal(err)
				}
				for _, r := range resp.Results {
					if r.ErrorCode != 0 {
						b.Fatalf("error code %d", r.ErrorCode)
					}
				}
			}
			b.StopTimer()
			reportPercentiles(b, lat)
			b.ReportMetric(float64(batches*b.N)/b.Elapsed().Seconds(), "batches/s")
		})
	}
}

func reportPercentiles(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	pct := func(p float64) float64 {
		return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Nanoseconds()) / 1e6
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
}

// BenchmarkGroupOffsetCommit commits one partition's offset for a group
// per call, the way a consumer commits after processing: in-process (the
// group coordinator called directly, as groups.Direct does) and over NATS
// (as every broker reaches the cluster's group coordinator), in-process
// and over TCP on loopback. It reports latency percentiles.
func BenchmarkGroupOffsetCommit(b *testing.B) {
	for _, tr := range transports {
		b.Run(tr, func(b *testing.B) {
			ns := natstest.StartWith(b, &server.Options{})
			c, err := coordinator.Open(coordinator.Options{Dir: b.TempDir()})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { c.Close() })
			gs, err := groups.Open(groups.Options{Dir: b.TempDir(), Topics: c})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { gs.Close() })
			ctx := context.Background()
			tp, err := c.CreateTopic(ctx, coordapi.CreateTopicRequest{Name: "t", Partitions: 1, ReplicationFactor: -1})
			if err != nil {
				b.Fatal(err)
			}
			commit := func(ctx context.Context, req *kmsg.OffsetCommitRequest) (*kmsg.OffsetCommitResponse, error) {
				return gs.OffsetCommit(ctx, req), nil
			}
			if tr != "direct" {
				connect := func() *nats.Conn {
					opt := nats.InProcessServer(ns)
					url := ""
					if tr == "tcp" {
						opt, url = func(*nats.Options) error { return nil }, ns.ClientURL()
					}
					nc, err := nats.Connect(url, opt)
					if err != nil {
						b.Fatal(err)
					}
					b.Cleanup(nc.Close)
					return nc
				}
				srv, err := rpc.ServeWith(context.Background(), connect(), "bench", c, rpc.ServerOptions{Groups: gs})
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(srv.Close)
				commit = rpc.NewClient(connect(), "bench", rpc.ClientOptions{}).Groups().OffsetCommit
			}
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := range b.N {
				req := kmsg.NewPtrOffsetCommitRequest()
				req.Version, req.Group, req.Generation = 9, "bench", -1
				req.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "t", TopicID: tp.ID,
					Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: int64(i), LeaderEpoch: -1}}}}
				start := time.Now()
				resp, err := commit(ctx, req)
				lat = append(lat, time.Since(start))
				if err != nil {
					b.Fatal(err)
				}
				if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
					b.Fatalf("commit: error %d", code)
				}
			}
			b.StopTimer()
			reportPercentiles(b, lat)
		})
	}
}
