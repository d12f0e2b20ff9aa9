package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/internal/testkit/floetest"
	"github.com/floe-io/floe/record"
)

// BenchmarkProduceLatencyFloor puts issue 11's produce latency at low load
// (one producer, 1 KiB records, one request in flight, 100 requests a
// second, on the embedded default: `go run ./cmd/broker`, here its binary
// on a fresh data directory) beside the floor this machine sets under it,
// each measured in the same run, the operations taken in turn so that they
// share the machine's moments:
//
//   - sync: 1 KiB appended to a file beside the broker's data and synced,
//     the device round trip every acknowledged produce waits for (the
//     coordinator's synced Pebble commit, which carries the object);
//   - echo: 1.1 KiB sent over loopback TCP and echoed back by a goroutine
//     of this process: the network round trip with nothing served;
//   - raw-apiversions, raw-produce: an ApiVersions and a Produce (v7,
//     acks=all, one 1 KiB record), written to the broker and read back on
//     a socket of their own, with no client library: the broker's own time;
//   - franz-apiversions, franz-produce: the same through franz-go, with the
//     loadtest's producer settings (linger 0, no compression, no
//     idempotence): what `loadtest --max-inflight 1` reports.
//
// It reports each p50 (and the produces' p90 and p99) in ms, and two differences
// of p50s: broker-over-floor (raw-produce less sync and echo: what the
// broker adds to a durable write and a round trip) and franz-overhead
// (franz-produce less raw-produce: what the client adds).
//
//	go test ./e2e -run '^$' -bench ProduceLatencyFloor -benchtime 500x
//
// This machine's floor drifts by more than a change to the produce path
// moves it (the paced sync's p50 went from 0.30 to 0.48 ms within one
// session), so runs taken minutes apart cannot tell a change of tens of
// microseconds. With FLOE_BENCH_BASELINE_BROKER set to another build's
// broker binary, that broker also runs, on a data directory of its own,
// with the same four operations (its names prefixed "baseline-"); each
// round takes the two brokers' operations in alternating order, so that
// both are measured in the same moments and neither always goes first.
// this-minus-baseline-ms is the difference of their raw produces' p50s,
// this-minus-baseline-paired-ms the median of each round's difference
// (negative: this build is faster). Runs of one build against itself
// (400 rounds) gave -0.017 to +0.001 ms: a difference within about 0.02 ms
// of zero is no difference.
//
//	git archive HEAD | tar -x -C /tmp/floe-base && (cd /tmp/floe-base && go build -o /tmp/broker-base ./cmd/broker)
//	FLOE_BENCH_BASELINE_BROKER=/tmp/broker-base go test ./e2e -run '^$' -bench ProduceLatencyFloor -benchtime 400x
func BenchmarkProduceLatencyFloor(b *testing.B) {
	dataDir := b.TempDir()
	const topic = "latency-floor"
	ctx := context.Background()
	value := make([]byte, 1024)
	for i := range value {
		value[i] = byte('a' + i%26)
	}
	apiVersions := kmsg.NewPtrApiVersionsRequest()
	apiVersions.Version, apiVersions.ClientSoftwareName, apiVersions.ClientSoftwareVersion = 3, "floe-bench", "1"
	apiVersionsBody := apiVersions.AppendTo(nil)
	produceBody := produceRequest(b, topic, value).AppendTo(nil)

	type op struct {
		name string
		fn   func() error
	}
	// brokerOps starts bin on a data directory of its own and returns its
	// four operations, named with prefix.
	brokerOps := func(prefix, bin string) []op {
		p := floetest.StartBrokerBinary(b, bin, nil, "--data-dir", filepath.Join(dataDir, prefix+"broker"))
		cl, err := kgo.NewClient(kgo.SeedBrokers(p.KafkaAddr), kgo.DisableIdempotentWrite(),
			kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(0),
			kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.DefaultProduceTopic(topic))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(cl.Close)
		if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, topic); err != nil {
			b.Fatal(err)
		}
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: value}).FirstErr(); err != nil {
			b.Fatal(err) // the client's connections and metadata, before timing
		}
		raw := dialRaw(b, p.KafkaAddr)
		return []op{
			{prefix + "raw-apiversions", func() error { return raw.apiVersions(b, apiVersionsBody) }},
			{prefix + "raw-produce", func() error { return raw.produce(b, produceBody) }},
			{prefix + "franz-apiversions", func() error {
				_, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
				return err
			}},
			{prefix + "franz-produce", func() error { return cl.ProduceSync(ctx, &kgo.Record{Value: value}).FirstErr() }},
		}
	}
	this := brokerOps("", floetest.Binary(b, "broker"))
	var baseline []op
	if bin := os.Getenv("FLOE_BENCH_BASELINE_BROKER"); bin != "" {
		baseline = brokerOps("baseline-", bin)
	}

	synced, err := os.Create(filepath.Join(dataDir, "sync"))
	if err != nil {
		b.Fatal(err)
	}
	defer synced.Close()
	echo, ping := startEcho(b), make([]byte, 1100)
	floor := []op{
		{"sync", func() error {
			if _, err := synced.Write(value); err != nil {
				return err
			}
			return synced.Sync()
		}},
		{"echo", func() error { return echo.roundTrip(ping) }},
	}

	lat := map[string][]time.Duration{}
	// paired holds, per round, this broker's raw produce less the
	// baseline's, taken in the same round.
	var paired []time.Duration
	next := time.NewTicker(10 * time.Millisecond) // 100 operations a second
	defer next.Stop()
	b.ResetTimer()
	for round := range b.N {
		order := [][]op{floor, this, baseline}
		if round%2 == 1 {
			order[1], order[2] = baseline, this // neither broker always goes first
		}
		var produced [2]time.Duration
		for _, ops := range order {
			for _, op := range ops {
				<-next.C
				start := time.Now()
				if err := op.fn(); err != nil {
					b.Fatalf("%s: %v", op.name, err)
				}
				d := time.Since(start)
				lat[op.name] = append(lat[op.name], d)
				switch op.name {
				case "raw-produce":
					produced[0] = d
				case "baseline-raw-produce":
					produced[1] = d
				}
			}
		}
		if baseline != nil {
			paired = append(paired, produced[0]-produced[1])
		}
	}
	b.StopTimer()
	p50 := make(map[string]float64, len(lat))
	for name, l := range lat {
		slices.Sort(l)
		p50[name] = ms(l[len(l)/2])
		b.ReportMetric(p50[name], name+"-p50-ms")
		if strings.HasSuffix(name, "-produce") {
			b.ReportMetric(ms(l[len(l)*9/10]), name+"-p90-ms")
			b.ReportMetric(ms(l[len(l)*99/100]), name+"-p99-ms")
		}
	}
	b.ReportMetric(p50["raw-produce"]-p50["sync"]-p50["echo"], "broker-over-floor-ms")
	b.ReportMetric(p50["franz-produce"]-p50["raw-produce"], "franz-overhead-ms")
	if baseline != nil {
		b.ReportMetric(p50["raw-produce"]-p50["baseline-raw-produce"], "this-minus-baseline-ms")
		slices.Sort(paired)
		b.ReportMetric(ms(paired[len(paired)/2]), "this-minus-baseline-paired-ms")
	}
}

// rawConn speaks Kafka requests encoded beforehand on a socket of its own,
// with no client library.
type rawConn struct {
	c    net.Conn
	rd   *bufio.Reader
	corr int32
}

func dialRaw(b *testing.B, addr string) *rawConn {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	return &rawConn{c: c, rd: bufio.NewReader(c)}
}

// apiVersions sends an ApiVersions v3 of body and checks its answer.
func (r *rawConn) apiVersions(b *testing.B, body []byte) error {
	r.corr++
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = 3
	if err := resp.ReadFrom(rawRoundTrip(b, r.c, r.rd, int16(kmsg.ApiVersions), 3, r.corr, body)); err != nil {
		return err
	}
	return kerr.ErrorForCode(resp.ErrorCode)
}

// produce sends a Produce v7 of body (produceRequest) and checks its answer.
func (r *rawConn) produce(b *testing.B, body []byte) error {
	r.corr++
	return produceError(rawRoundTrip(b, r.c, r.rd, int16(kmsg.Produce), 7, r.corr, body))
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// echoConn is a loopback TCP connection to a goroutine that writes back
// whatever it reads.
type echoConn struct {
	c   net.Conn
	buf []byte
}

func startEcho(b *testing.B) *echoConn {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ln.Close() })
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		io.Copy(c, c)
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	return &echoConn{c: c}
}

func (e *echoConn) roundTrip(msg []byte) error {
	if _, err := e.c.Write(msg); err != nil {
		return err
	}
	e.buf = slices.Grow(e.buf[:0], len(msg))[:len(msg)]
	_, err := io.ReadFull(e.c, e.buf)
	return err
}

// produceRequest is a Produce v7 (acks=all) of value as one record to
// partition 0 of topic, from a producer without idempotence.
func produceRequest(b *testing.B, topic string, value []byte) *kmsg.ProduceRequest {
	now := time.Now().UnixMilli()
	batch, err := record.Build(record.BuildOptions{PartitionLeaderEpoch: -1, ProducerID: -1, ProducerEpoch: -1,
		BaseSequence: -1, BaseTimestamp: now}, []record.Record{{Value: value}})
	if err != nil {
		b.Fatal(err)
	}
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = 7, -1, 30_000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// produceError decodes a Produce v7 answer for one partition and returns
// its error.
func produceError(body []byte) error {
	resp := kmsg.NewPtrProduceResponse()
	resp.Version = 7
	if err := resp.ReadFrom(body); err != nil {
		return fmt.Errorf("produce answer: %w", err)
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return fmt.Errorf("produce answer for %d topics", len(resp.Topics))
	}
	return kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode)
}
