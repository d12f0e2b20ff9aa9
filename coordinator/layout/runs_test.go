package layout

import (
	"encoding/binary"
	"reflect"
	"strings"
	"testing"

	"github.com/floe-io/floe/coordapi"
)

func TestBatchRunEncoding(t *testing.T) {
	st := Producer{Epoch: 3, LastUpdateMs: 1_700_000_000_000, N: 2,
		Batches: [MaxProducerBatches]SeqBatch{{BaseSeq: 0, LastSeq: 4, BaseOffset: 10, Timestamp: 99}, {BaseSeq: 5, LastSeq: 5, BaseOffset: 20, Timestamp: -1}}}
	tests := []struct {
		name      string
		h         RunHeader
		batches   []coordapi.BatchCoord
		producers map[int64]Producer
	}{
		{
			name:    "one batch",
			h:       RunHeader{Object: 7, MaxTimestamp: -1, MaxTimestampOffset: -1, MaxTimestampLast: -1},
			batches: []coordapi.BatchCoord{{ByteOffset: 0, ByteLength: 100, BaseOffset: 0, LastOffset: 0, MaxTimestamp: 5}},
		},
		{
			name: "gaps, going back, shrinking timestamps",
			h:    RunHeader{Object: 1 << 40, MaxTimestamp: 1_700_000_000_123, MaxTimestampOffset: 41, MaxTimestampLast: 49},
			batches: []coordapi.BatchCoord{
				{ByteOffset: 5000, ByteLength: 70, BaseOffset: 40, LastOffset: 49, MaxTimestamp: 1_700_000_000_123},
				{ByteOffset: 100, ByteLength: 1 << 30, BaseOffset: 50, LastOffset: 50, MaxTimestamp: 3},
				{ByteOffset: 1<<30 + 100, ByteLength: 1, BaseOffset: 51, LastOffset: 51 + 1<<31 - 2, MaxTimestamp: -1},
			},
			producers: map[int64]Producer{9: st},
		},
		{
			name: "log append time, two producers",
			h:    RunHeader{Object: 0, LogAppendTime: true, MaxTimestamp: 8, MaxTimestampOffset: 1 << 50, MaxTimestampLast: 1 << 50},
			batches: []coordapi.BatchCoord{
				{ByteOffset: 0, ByteLength: 10, BaseOffset: 1 << 50, LastOffset: 1 << 50, MaxTimestamp: 8, LogAppendTime: true},
				{ByteOffset: 10, ByteLength: 10, BaseOffset: 1<<50 + 1, LastOffset: 1<<50 + 3, MaxTimestamp: 8, LogAppendTime: true},
			},
			producers: map[int64]Producer{1: st, 1 << 60: {Epoch: 0, LastUpdateMs: 0, N: 0}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := AppendBatchRun([]byte("prefix"), &tt.h, tt.batches)
			v = AppendRunProducerCount(v, len(tt.producers))
			var ids []int64
			for id := range tt.producers {
				ids = append(ids, id)
			}
			for _, id := range ids {
				ps := tt.producers[id]
				v = AppendRunProducer(v, id, &ps)
			}
			if !strings.HasPrefix(string(v), "prefix") {
				t.Fatal("AppendBatchRun overwrote its buffer")
			}
			v = v[len("prefix"):]
			last := tt.batches[len(tt.batches)-1].LastOffset
			h, got, prods, err := DecodeBatchRun(last, v, []coordapi.BatchCoord{{ObjectKey: "kept"}})
			if err != nil {
				t.Fatal(err)
			}
			if h != tt.h {
				t.Errorf("header %+v, want %+v", h, tt.h)
			}
			if want := append([]coordapi.BatchCoord{{ObjectKey: "kept"}}, tt.batches...); !reflect.DeepEqual(got, want) {
				t.Errorf("batches %+v, want %+v", got, want)
			}
			var gotIDs []int64
			err = DecodeRunProducers(prods, func(id int64, ps Producer) {
				gotIDs = append(gotIDs, id)
				if ps != tt.producers[id] {
					t.Errorf("producer %d: %+v, want %+v", id, ps, tt.producers[id])
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(gotIDs, ids) {
				t.Errorf("producers %v, want %v in order", gotIDs, ids)
			}
			// Another last offset than the batches say is corruption.
			if _, _, _, err := DecodeBatchRun(last+1, v, nil); err == nil {
				t.Error("decoded with a wrong key")
			}
		})
	}
}

func TestBatchRunDecodeErrors(t *testing.T) {
	good := AppendRunProducerCount(AppendBatchRun(nil, &RunHeader{Object: 1},
		[]coordapi.BatchCoord{{ByteOffset: 0, ByteLength: 10, BaseOffset: 5, LastOffset: 6}}), 0)
	header := func(n, base uint64) []byte {
		b := []byte{ValueRun, 0, 1}
		b = binary.AppendUvarint(b, n)
		b = binary.AppendUvarint(b, base)
		return append(b, 0, 0, 0)
	}
	batch := func(b []byte, off int64, length, delta uint64) []byte {
		b = binary.AppendVarint(b, off)
		b = binary.AppendUvarint(b, length)
		b = binary.AppendUvarint(b, delta)
		return binary.AppendVarint(b, 0)
	}
	tests := []struct {
		name string
		v    []byte
		last int64
	}{
		{"empty", nil, 6},
		{"format 1 batch value", []byte{ValueV1, 0, 1, 0, 10, 1, 0}, 6},
		{"unknown flags", append([]byte{ValueRun, 2}, good[2:]...), 6},
		{"truncated", good[:len(good)-3], 6},
		{"no batches", append(header(0, 5), 0), 6},
		{"more batches than bytes", batch(header(1000, 5), 0, 10, 1), 6},
		{"zero length", batch(header(1, 5), 0, 0, 1), 6},
		{"negative byte offset", batch(header(1, 5), -1, 10, 1), 6},
		{"length over int32", batch(header(1, 5), 0, 1<<31, 1), 6},
		{"delta over int32", batch(header(1, 0), 0, 10, 1<<31), 1 << 31},
		{"batch past the key", batch(header(1, 5), 0, 10, 2), 6},
		{"batches short of the key", batch(header(1, 5), 0, 10, 0), 6},
		{"negative key", good, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, _, _, err := DecodeBatchRun(tt.last, tt.v, nil); err == nil {
				t.Fatalf("decoded %x", tt.v)
			}
		})
	}
	prodTests := []struct {
		name    string
		section []byte
	}{
		{"empty", []byte{}},
		{"count over bytes", []byte{100, 1, 0, 0, 0}},
		{"too many seq batches", []byte{1, 1, 0, 0, MaxProducerBatches + 1}},
		{"truncated state", []byte{1, 1, 0}},
		{"trailing bytes", []byte{0, 0}},
		{"producer id over int64", append(binary.AppendUvarint([]byte{1}, 1<<63), 0, 0, 0)},
	}
	for _, tt := range prodTests {
		t.Run("producers "+tt.name, func(t *testing.T) {
			if err := DecodeRunProducers(tt.section, func(int64, Producer) {}); err == nil {
				t.Fatalf("decoded %x", tt.section)
			}
		})
	}
}

// FuzzBatchRun decodes arbitrary run values: no panic, and whatever
// decodes encodes to a value that decodes the same.
func FuzzBatchRun(f *testing.F) {
	st := Producer{Epoch: 1, LastUpdateMs: 5, N: 1, Batches: [MaxProducerBatches]SeqBatch{{0, 3, 7, 9}}}
	v := AppendBatchRun(nil, &RunHeader{Object: 3, LogAppendTime: true, MaxTimestamp: 9, MaxTimestampOffset: 4, MaxTimestampLast: 7},
		[]coordapi.BatchCoord{{ByteOffset: 0, ByteLength: 10, BaseOffset: 4, LastOffset: 4, MaxTimestamp: 9},
			{ByteOffset: 20, ByteLength: 5, BaseOffset: 5, LastOffset: 7, MaxTimestamp: 2}})
	v = AppendRunProducer(AppendRunProducerCount(v, 1), 42, &st)
	f.Add(int64(7), v)
	f.Add(int64(0), []byte{ValueRun})
	f.Fuzz(func(t *testing.T, last int64, v []byte) {
		h, batches, section, err := DecodeBatchRun(last, v, nil)
		if err != nil {
			return
		}
		type prod struct {
			id int64
			st Producer
		}
		var prods []prod
		if err := DecodeRunProducers(section, func(id int64, st Producer) { prods = append(prods, prod{id, st}) }); err != nil {
			return
		}
		again := AppendRunProducerCount(AppendBatchRun(nil, &h, batches), len(prods))
		for _, p := range prods {
			again = AppendRunProducer(again, p.id, &p.st)
		}
		h2, batches2, _, err := DecodeBatchRun(last, again, nil)
		if err != nil || h2 != h || !reflect.DeepEqual(batches2, batches) {
			t.Fatalf("re-encoded run decodes to %+v %+v, %v; was %+v %+v", h2, batches2, err, h, batches)
		}
	})
}
