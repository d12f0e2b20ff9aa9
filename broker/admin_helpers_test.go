package broker

import (
	"bytes"
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/vfs"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/coordinator"
	"github.com/floe-io/floe/objectstore"
	"github.com/floe-io/floe/record"
)

var _ coordapi.Coordinator = (*coordinator.Coordinator)(nil)

// newTestCoordinator opens a real coordinator whose Pebble state lives in
// memory, closed when the test ends.
func newTestCoordinator(t *testing.T, mods ...func(*coordinator.Options)) *coordinator.Coordinator {
	t.Helper()
	opts := coordinator.Options{Dir: "coord", FS: vfs.NewMem()}
	for _, m := range mods {
		m(&opts)
	}
	c, err := coordinator.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("close coordinator: %v", err)
		}
	})
	return c
}

// createTopic creates a topic on c (test setup).
func createTopic(t *testing.T, c coordapi.Coordinator, name string, partitions int32, configs map[string]string) coordapi.Topic {
	t.Helper()
	tp, err := c.CreateTopic(t.Context(), coordapi.CreateTopicRequest{Name: name, Partitions: partitions, ReplicationFactor: -1, Configs: configs})
	if err != nil {
		t.Fatalf("create topic %s: %v", name, err)
	}
	return tp
}

// testObjects numbers the objects commitBatches commits.
var testObjects atomic.Int64

// commitBatches commits one object to partition of topic id, holding a
// record batch per element of batches: batch i has a record per timestamp
// in batches[i] (so its max timestamp is their max). When store is not nil
// the object's bytes are put there, for tests that read the batches back
// (ListOffsets by timestamp, Fetch). It fails the test unless every batch
// is accepted, and returns the base offsets they got.
func commitBatches(t *testing.T, c coordapi.Coordinator, store objectstore.Store, id coordapi.TopicID, partition int32, batches ...[]int64) []int64 {
	t.Helper()
	req := &coordapi.CommitRequest{ObjectKey: fmt.Sprintf("wal/test-%d", testObjects.Add(1)), BrokerID: 1}
	var object []byte
	for _, tss := range batches {
		recs := make([]record.Record, len(tss))
		for i, ts := range tss {
			recs[i] = record.Record{Key: []byte("k"), TimestampDelta: ts - tss[0]}
		}
		data, err := record.Build(record.BuildOptions{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, BaseTimestamp: tss[0]}, recs)
		if err != nil {
			t.Fatal(err)
		}
		h, err := record.ParseHeader(data)
		if err != nil {
			t.Fatal(err)
		}
		req.Batches = append(req.Batches, coordapi.CommitBatch{
			TopicID: id, Partition: partition, ByteOffset: int64(len(object)), ByteLength: int32(len(data)),
			LastOffsetDelta: h.LastOffsetDelta, MaxTimestamp: h.MaxTimestamp, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1,
		})
		object = append(object, data...)
	}
	req.ObjectSize = int64(len(object))
	if store != nil {
		if err := store.Put(t.Context(), req.ObjectKey, object); err != nil {
			t.Fatal(err)
		}
	}
	resp, err := c.CommitObject(t.Context(), req)
	if err != nil {
		t.Fatalf("commit %s: %v", req.ObjectKey, err)
	}
	var bases []int64
	for i, r := range resp.Results {
		if r.ErrorCode != 0 {
			t.Fatalf("commit %s: batch %d: %+v", req.ObjectKey, i, r)
		}
		bases = append(bases, r.BaseOffset)
	}
	return bases
}

// timestamps returns n copies of ts: the record timestamps of a batch of n
// records that all carry ts.
func timestamps(n int, ts int64) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = ts
	}
	return out
}

// storeReader reads batches straight from a store (no cache).
type storeReader struct{ s objectstore.Store }

func (r storeReader) GetRange(ctx context.Context, key string, _, offset, length int64) ([]byte, error) {
	return r.s.GetRange(ctx, key, offset, length)
}

// newAdminBroker returns a Broker on coord that serves no listener:
// handler tests call serveVersion.
func newAdminBroker(t *testing.T, coord coordapi.Coordinator, mods ...func(*Options)) *Broker {
	t.Helper()
	return newTestBroker(t, Deps{Coordinator: coord}, mods...)
}

// newTestBroker returns a Broker on deps that serves no listener, closed
// when the test ends.
func newTestBroker(t *testing.T, deps Deps, mods ...func(*Options)) *Broker {
	t.Helper()
	opts := Options{NodeID: 1, AdvertisedAddr: "127.0.0.1:9092", ClusterID: "floe-test", DefaultPartitions: 4}
	for _, m := range mods {
		m(&opts)
	}
	b := New(opts, deps)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		b.Close(ctx)
	})
	return b
}

// serveVersion sends req at version through the broker's own request
// decoding (a full frame, header included, through parseRequest), calls the
// registered handler, and returns its response as the client would read it:
// encoded at version, decoded back, and re-encoded to the same bytes. So a
// test checks only what the wire carries at that version.
func serveVersion[R kmsg.Response](t *testing.T, b *Broker, req kmsg.Request, version int16) R {
	t.Helper()
	req.SetVersion(version)
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("admin-test")).AppendRequest(nil, req, 42)
	r, a, err := parseRequest(frame[4:])
	if err != nil {
		t.Fatalf("%s v%d: parse request: %v", kmsg.NameForKey(req.Key()), version, err)
	}
	if a.fn == nil {
		t.Fatalf("%s: not a plain handler", kmsg.NameForKey(req.Key()))
	}
	resp, err := a.fn(b, context.Background(), r)
	if err != nil {
		t.Fatalf("%s v%d: handler error (closes the connection): %v", kmsg.NameForKey(req.Key()), version, err)
	}
	if resp == nil {
		t.Fatalf("%s v%d: no response", kmsg.NameForKey(req.Key()), version)
	}
	resp.SetVersion(version)
	wire := resp.AppendTo(nil)
	got := kmsg.ResponseForKey(req.Key())
	got.SetVersion(version)
	if err := got.ReadFrom(wire); err != nil {
		t.Fatalf("%s v%d: decode response: %v", kmsg.NameForKey(req.Key()), version, err)
	}
	if again := got.AppendTo(nil); !bytes.Equal(again, wire) {
		t.Fatalf("%s v%d: response does not round-trip:\n%x\n%x", kmsg.NameForKey(req.Key()), version, wire, again)
	}
	return got.(R)
}

// servedVersions returns every version the broker serves of key.
func servedVersions(t *testing.T, key kmsg.Key) []int16 {
	t.Helper()
	a := lookupAPI(int16(key))
	if a == nil {
		t.Fatalf("%s is not served", kmsg.NameForKey(int16(key)))
	}
	var out []int16
	for v := a.min; v <= a.max; v++ {
		out = append(out, v)
	}
	return out
}

// showStr prints a nullable string in failure messages.
func showStr(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}
