package broker

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/broker/producecheck"
	"github.com/floe-io/floe/record"
)

// frame encodes req as a client would, without the size prefix.
func frame(req kmsg.Request, version int16, corr int32, clientID *string) []byte {
	req.SetVersion(version)
	var b []byte
	b = binary.BigEndian.AppendUint16(b, uint16(req.Key()))
	b = binary.BigEndian.AppendUint16(b, uint16(version))
	b = binary.BigEndian.AppendUint32(b, uint32(corr))
	if clientID == nil {
		b = binary.BigEndian.AppendUint16(b, 0xffff)
	} else {
		b = binary.BigEndian.AppendUint16(b, uint16(len(*clientID)))
		b = append(b, *clientID...)
	}
	if req.IsFlexible() {
		b = append(b, 0)
	}
	return req.AppendTo(b)
}

// FuzzParseRequest feeds arbitrary frames to the request decoder: it must
// return a request or an error, never panic. A Produce request's batches then
// go through the produce path's checks, as each kind of topic runs them:
// they must accept or answer one of the codes Kafka answers bad batches with.
func FuzzParseRequest(f *testing.F) {
	id := "fuzz"
	meta := kmsg.NewPtrMetadataRequest()
	topic := "t"
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = &topic
	meta.Topics = append(meta.Topics, mt)
	f.Add(frame(meta, 12, 1, &id))
	f.Add(frame(meta, 1, 2, nil))
	f.Add(frame(kmsg.NewPtrApiVersionsRequest(), 3, 3, &id))
	f.Add(frame(kmsg.NewPtrApiVersionsRequest(), 9, 3, &id))
	prod := kmsg.NewPtrProduceRequest()
	pt := kmsg.NewProduceRequestTopic()
	pt.Topic = "t"
	pp := kmsg.NewProduceRequestTopicPartition()
	pp.Records = []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 10, 1, 2, 3}
	pt.Partitions = append(pt.Partitions, pp)
	prod.Topics = append(prod.Topics, pt)
	f.Add(frame(prod, 9, 4, &id))
	f.Add(frame(prod, 3, 4, nil))
	keys := [][]byte{[]byte("k"), nil}
	for _, codec := range []record.Codec{record.CodecNone, record.CodecGzip, record.CodecSnappy, record.CodecLZ4, record.CodecZstd} {
		three := testRecords(keys, 0, 1, 2)
		for _, records := range [][]byte{
			testBatch(f, codec, 3, three),
			testBatch(f, codec, 4, three),                // fewer records than the header says
			testBatch(f, codec, 3, three[:len(three)-1]), // the last one cut short
			rawTestBatch(codec, 3, []byte("not compressed")),
		} {
			pp.Records = records
			f.Add(frame(prod, 9, 4, &id))
		}
	}
	f.Add(frame(kmsg.NewPtrFetchRequest(), 13, 5, &id))
	f.Add([]byte{0, 18, 0, 3, 0, 0, 0, 1, 0xff, 0xff, 5, 1, 2})
	f.Fuzz(func(t *testing.T, b []byte) {
		r, a, err := parseRequest(b)
		if err != nil {
			return
		}
		if r == nil || a == nil || r.req == nil {
			t.Fatalf("nil request without an error")
		}
		if r.version < a.min || r.version > a.max {
			t.Fatalf("version %d outside served [%d, %d]", r.version, a.min, a.max)
		}
		if prod, ok := r.req.(*kmsg.ProduceRequest); ok {
			for _, pt := range prod.Topics {
				for _, pp := range pt.Partitions {
					checkProduceBatches(t, pp.Records)
				}
			}
		}
	})
}

// checkProduceBatches runs the produce path's per-batch checks on records for
// a plain, a compacted and a kv-indexed topic, and fails t on a code Kafka
// would not answer. Each batch is checked once more with its CRC fixed, so
// that mutations get past it to the records.
func checkProduceBatches(t *testing.T, records []byte) {
	batches, err := record.Split(records)
	if err != nil {
		return
	}
	for _, b := range batches {
		fixed := bytes.Clone(b)
		if len(fixed) > 21 {
			binary.BigEndian.PutUint32(fixed[17:], crc32.Checksum(fixed[21:], crc32.MakeTable(crc32.Castagnoli)))
		}
		checkProduceBatch(t, b)
		checkProduceBatch(t, fixed)
	}
}

// checkProduceBatch checks one batch as checkProduceBatches says.
func checkProduceBatch(t *testing.T, data []byte) {
	if _, err := record.Validate(data); err != nil {
		return
	}
	for _, kind := range []struct{ compacted, indexed bool }{{false, false}, {true, false}, {false, true}, {true, true}} {
		keys, nullKeys, err := producecheck.Records(data, producecheck.Rules{Compacted: kind.compacted, KVIndexed: kind.indexed})
		if err == nil {
			if !kind.indexed && (keys != nil || nullKeys != 0) {
				t.Fatalf("keys from a topic without the index")
			}
			continue
		}
		var ke *kerr.Error
		if !errors.As(err, &ke) || (ke != kerr.InvalidRecord && ke != kerr.CorruptMessage && ke != kerr.MessageTooLarge) {
			t.Fatalf("Records(compacted %v, indexed %v): %v", kind.compacted, kind.indexed, err)
		}
	}
}

func TestParseRequest(t *testing.T) {
	id := "client"
	meta := kmsg.NewPtrMetadataRequest()
	tests := []struct {
		name    string
		frame   []byte
		wantErr bool
		wantKey int16
	}{
		{"metadata v12", frame(meta, 12, 7, &id), false, 3},
		{"metadata v0 null client id", frame(kmsg.NewPtrMetadataRequest(), 0, 7, nil), false, 3},
		{"truncated header", []byte{0, 3, 0}, true, 0},
		{"unknown key", []byte{0x7f, 0x7f, 0, 0, 0, 0, 0, 1, 0xff, 0xff}, true, 0},
		{"unsupported version", frame(kmsg.NewPtrMetadataRequest(), 13, 7, nil), true, 0},
		{"truncated body", frame(meta, 12, 7, &id)[:14], true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, _, err := parseRequest(tt.frame)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if err == nil && r.key != tt.wantKey {
				t.Fatalf("key %d, want %d", r.key, tt.wantKey)
			}
		})
	}
}
