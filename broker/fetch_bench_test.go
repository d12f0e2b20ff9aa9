package broker

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/cockroachdb/pebble/vfs"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/coordinator"
	"github.com/floe-io/floe/ingest"
	"github.com/floe-io/floe/internal/testkit"
	"github.com/floe-io/floe/objectstore"
	"github.com/floe-io/floe/record"
)

// heldObjects keeps every uploaded object (the ingester's write-through)
// and serves ranges of them as sub-slices, as the chunk cache serves a
// read within one chunk: a fetch's reads then cost the broker nothing but
// its own buffers.
type heldObjects struct {
	mu sync.RWMutex
	m  map[string][]byte
}

func (h *heldObjects) Put(key string, data []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.m[key] = data
}

func (h *heldObjects) GetRange(_ context.Context, key string, _, offset, length int64) ([]byte, error) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	data, ok := h.m[key]
	if !ok || offset+length > int64(len(data)) {
		return nil, fmt.Errorf("get %s: %w", key, objectstore.ErrNotFound)
	}
	return data[offset : offset+length : offset+length], nil
}

// BenchmarkFetchRequest is a consumer's Fetch over a loopback TCP
// connection: 1 MiB of 1 KiB records from one partition, its coordinates
// from the coordinator, its bytes from a reader that hands out sub-slices
// (the chunk cache's hit), patched and answered. Its allocations are the
// fetch path's own per request.
func BenchmarkFetchRequest(b *testing.B) {
	coord, err := coordinator.Open(coordinator.Options{Dir: "coord", FS: vfs.NewMem()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = coord.Close() })
	ctx := context.Background()
	if _, err := coord.CreateTopic(ctx, coordapi.CreateTopicRequest{Name: "bench", Partitions: 1, ReplicationFactor: -1}); err != nil {
		b.Fatal(err)
	}
	held := &heldObjects{m: map[string][]byte{}}
	in, err := ingest.New(ingest.Options{MaxPutRate: ingest.PutRateLocal, Logger: testkit.Logger()}, objectstore.NewMemory(), coord, held)
	if err != nil {
		b.Fatal(err)
	}
	br := New(Options{NodeID: 1, Logger: testkit.Logger()}, Deps{Coordinator: coord, Appender: in, Reader: held})
	roundTrip := serveBench(b, br, in)
	formatter := kmsg.NewRequestFormatter(kmsg.FormatterClientID("bench"))

	// 2 MiB of batches of 16 records of 1 KiB: twice what one fetch reads.
	kr := kmsg.Record{Value: make([]byte, 1024)}
	kr.Length = int32(len(kr.AppendTo(nil)) - 1)
	var records []byte
	for i := range 16 {
		kr.OffsetDelta = int32(i)
		records = kr.AppendTo(records)
	}
	for range 128 {
		req := kmsg.NewPtrProduceRequest()
		req.SetVersion(9)
		req.Acks, req.TimeoutMillis = -1, 5000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "bench"
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = rawTestBatch(record.CodecNone, 16, records)
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		out := roundTrip(formatter.AppendRequest(nil, req, 1))
		pr := kmsg.NewPtrProduceResponse()
		pr.SetVersion(9)
		if err := pr.ReadFrom(out[5:]); err != nil || pr.Topics[0].Partitions[0].ErrorCode != 0 {
			b.Fatalf("produce: %v %+v", err, pr)
		}
	}

	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(11)
	req.MaxBytes, req.MaxWaitMillis, req.MinBytes = 1<<20, 0, 1
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "bench"
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.PartitionMaxBytes = 1 << 20
	ft.Partitions = append(ft.Partitions, fp)
	req.Topics = append(req.Topics, ft)
	frame := formatter.AppendRequest(nil, req, 2)
	check := func(out []byte) int {
		fr := kmsg.NewPtrFetchResponse()
		fr.SetVersion(11)
		if err := fr.ReadFrom(out[4:]); err != nil || fr.Topics[0].Partitions[0].ErrorCode != 0 {
			b.Fatalf("fetch: %v %+v", err, fr)
		}
		return len(fr.Topics[0].Partitions[0].RecordBatches)
	}
	n := check(roundTrip(frame))
	if n < 1<<20-32<<10 {
		b.Fatalf("fetch answered %d bytes of records, want about 1 MiB", n)
	}
	b.SetBytes(int64(n))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		roundTrip(frame)
	}
	b.StopTimer()
	if got := check(roundTrip(frame)); got != n {
		b.Fatalf("fetch answered %d bytes, first %d", got, n)
	}
}
