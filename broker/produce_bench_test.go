package broker

import (
	"bufio"
	"context"
	"encoding/binary"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/vfs"
	"github.com/twmb/franz-go/pkg/kmsg"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/coordinator"
	"github.com/floe-io/floe/ingest"
	"github.com/floe-io/floe/internal/testkit"
	"github.com/floe-io/floe/objectstore"
	"github.com/floe-io/floe/record"
)

// instantCommitter commits every object at once, with offsets counted from
// zero: the produce path without a coordinator's cost.
type instantCommitter struct{ next atomic.Int64 }

func (c *instantCommitter) CommitObject(_ context.Context, req *coordapi.CommitRequest) (*coordapi.CommitResponse, error) {
	resp := &coordapi.CommitResponse{Results: make([]coordapi.BatchResult, len(req.Batches))}
	for i, b := range req.Batches {
		resp.Results[i].BaseOffset = c.next.Add(int64(b.LastOffsetDelta)+1) - int64(b.LastOffsetDelta) - 1
		resp.Results[i].LogAppendTime = -1
	}
	return resp, nil
}

// BenchmarkProduceRequest is the broker's produce path over a loopback TCP
// connection, one request in flight: a Produce of one 1 KiB record read,
// validated, appended to the object buffer, uploaded to a memory store,
// committed by a committer that answers at once, and answered. Its time
// and allocations are the broker's and ingest's own per request, with
// tracing off (the default: it must cost nothing here).
func BenchmarkProduceRequest(b *testing.B) { benchProduce(b, nil) }

// BenchmarkProduceRequestTraced is BenchmarkProduceRequest with every
// request traced (sample ratio 1) into an exporter that drops the spans:
// what tracing costs the broker when on.
func BenchmarkProduceRequestTraced(b *testing.B) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(tracetest.NewNoopExporter()))
	b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	benchProduce(b, tp.Tracer("bench"))
}

func benchProduce(b *testing.B, tracer trace.Tracer) {
	coord, err := coordinator.Open(coordinator.Options{Dir: "coord", FS: vfs.NewMem()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = coord.Close() })
	if _, err := coord.CreateTopic(context.Background(), coordapi.CreateTopicRequest{Name: "bench", Partitions: 1, ReplicationFactor: -1}); err != nil {
		b.Fatal(err)
	}
	in, err := ingest.New(ingest.Options{MaxPutRate: ingest.PutRateLocal, Logger: testkit.Logger()}, objectstore.NewMemory(), &instantCommitter{}, nil)
	if err != nil {
		b.Fatal(err)
	}
	in.SetTracer(tracer)
	br := New(Options{NodeID: 1, Logger: testkit.Logger(), Tracer: tracer}, Deps{Coordinator: coord, Appender: in})
	roundTrip := serveBench(b, br, in)

	kr := kmsg.Record{Value: make([]byte, 1024)}
	kr.Length = int32(len(kr.AppendTo(nil)) - 1) // the Length 0 took one byte
	batch := rawTestBatch(record.CodecNone, 1, kr.AppendTo(nil))
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(9)
	req.Acks, req.TimeoutMillis = -1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "bench"
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("bench")).AppendRequest(nil, req, 1)

	resp := roundTrip(frame) // the topic cached, the first object's buffer made
	pr := kmsg.NewPtrProduceResponse()
	pr.SetVersion(9)
	if err := pr.ReadFrom(resp[5:]); err != nil || pr.Topics[0].Partitions[0].ErrorCode != 0 {
		b.Fatalf("produce: %v %+v", err, pr)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		roundTrip(frame)
	}
}

// serveBench serves br (and stops it and in at the end of b) on a loopback
// listener and returns a round trip over one connection to it: a request
// frame sent, its answer's frame (past the size) read into a buffer that
// the next round trip reuses.
func serveBench(b *testing.B, br *Broker, in *ingest.Ingester) func(frame []byte) []byte {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go br.Serve(ln)
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		nc.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = br.Close(ctx)
		_ = in.Close(ctx)
	})
	rd := bufio.NewReader(nc)
	var (
		size [4]byte
		resp []byte
	)
	return func(frame []byte) []byte {
		if _, err := nc.Write(frame); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(rd, size[:]); err != nil {
			b.Fatal(err)
		}
		n := int(binary.BigEndian.Uint32(size[:]))
		if cap(resp) < n {
			resp = make([]byte, n)
		}
		if _, err := io.ReadFull(rd, resp[:n]); err != nil {
			b.Fatal(err)
		}
		return resp[:n]
	}
}
