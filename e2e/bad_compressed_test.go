package e2e

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/floe-io/floe/internal/testkit/floetest"
	"github.com/floe-io/floe/node"
	"github.com/floe-io/floe/record"
)

// reframe returns batch b with its header's record count (and last offset delta) set
// to n and its records field replaced by data when data is not nil, with the batch
// length and CRC fixed: bytes a producer could send, whose header and CRC are sound.
func reframe(b []byte, n int32, data []byte) []byte {
	out := append([]byte(nil), b[:record.HeaderSize]...)
	if data == nil {
		data = b[record.HeaderSize:]
	}
	out = append(out, data...)
	binary.BigEndian.PutUint32(out[8:], uint32(len(out)-12))
	binary.BigEndian.PutUint32(out[23:], uint32(n-1))
	binary.BigEndian.PutUint32(out[57:], uint32(n))
	binary.BigEndian.PutUint32(out[17:], crc32.Checksum(out[21:], crc32.MakeTable(crc32.Castagnoli)))
	return out
}

// TestProduceBadCompressedBatch sends compressed batches that decompress to something
// else than their header says, through a raw Produce request to a real broker, on a
// topic without the key index: each is refused with the code Kafka answers, nothing of
// them is stored, and a consumer of the partition reads the good batches around them.
func TestProduceBadCompressedBatch(t *testing.T) {
	n := floetest.StartNode(t, node.Config{})
	ctx := context.Background()
	if _, err := newAdmin(t, n.KafkaAddr()).CreateTopic(ctx, 1, 1, nil, "poison"); err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.KafkaAddr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()

	build := func(codec record.Codec, values ...string) []byte {
		t.Helper()
		var recs []record.Record
		for _, v := range values {
			recs = append(recs, record.Record{Key: []byte("k-" + v), Value: []byte(v)})
		}
		b, err := record.Build(record.BuildOptions{Codec: codec, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1,
			PartitionLeaderEpoch: -1, BaseTimestamp: time.Now().UnixMilli()}, recs)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	var want []string
	steps := []struct {
		name    string
		records []byte
		code    int16
		values  []string // stored, when accepted
	}{
		{"good zstd", build(record.CodecZstd, "a", "b"), 0, []string{"a", "b"}},
		{"zstd of garbage", reframe(build(record.CodecZstd, "x", "y"), 2, []byte("garbage, not a zstd frame")), kerr.InvalidRecord.Code, nil},
		{"zstd with fewer records than its header", reframe(build(record.CodecZstd, "x", "y"), 3, nil), kerr.InvalidRecord.Code, nil},
		{"snappy with more records than its header", reframe(build(record.CodecSnappy, "x", "y", "z"), 2, nil), kerr.InvalidRecord.Code, nil},
		{"lz4 cut short", func() []byte {
			b := build(record.CodecLZ4, "x", "y")
			return reframe(b, 2, b[record.HeaderSize:len(b)-6])
		}(), kerr.InvalidRecord.Code, nil},
		{"gzip with fewer records than its header", reframe(build(record.CodecGzip, "x"), 2, nil), kerr.InvalidRecord.Code, nil},
		{"good snappy", build(record.CodecSnappy, "c"), 0, []string{"c"}},
		{"good lz4 after", build(record.CodecLZ4, "d", "e", "f"), 0, []string{"d", "e", "f"}},
	}
	for _, s := range steps {
		if got := produceRaw(t, cl, "poison", 0, s.records); got != s.code {
			t.Fatalf("%s: error code %d (%v), want %d (%v)", s.name, got, kerr.ErrorForCode(got), s.code, kerr.ErrorForCode(s.code))
		}
		want = append(want, s.values...)
	}

	cons, err := kgo.NewClient(kgo.SeedBrokers(n.KafkaAddr()),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"poison": {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	pctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	var got []string
	for len(got) < len(want) {
		fs := cons.PollFetches(pctx)
		if err := pctx.Err(); err != nil {
			t.Fatalf("consumed %q of %q: %v", got, want, err)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s/%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset != int64(len(got)) || string(r.Key) != "k-"+string(r.Value) {
				t.Errorf("record %d: offset %d key %q value %q", len(got), r.Offset, r.Key, r.Value)
			}
			got = append(got, string(r.Value))
		})
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("consumed %q, want %q", got, want)
	}
}
