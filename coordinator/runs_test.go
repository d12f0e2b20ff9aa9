package coordinator

import (
	"encoding/binary"
	"reflect"
	"strings"
	"testing"

	"github.com/floe-io/floe/coordapi"
)

func TestBatchRunEncoding(t *testing.T) {
	st := producerState{epoch: 3, lastUpdateMs: 1_700_000_000_000, n: 2,
		batches: [maxProducerBatches]seqBatch{{baseSeq: 0, lastSeq: 4, baseOffset: 10, timestamp: 99}, {baseSeq: 5, lastSeq: 5, baseOffset: 20, timestamp: -1}}}
	tests := []struct {
		name      string
		h         runHeader
		batches   []coordapi.BatchCoord
		producers map[int64]producerState
	}{
		{
			name:    "one batch",
			h:       runHeader{object: 7, maxTimestamp: -1, maxTimestampOffset: -1, maxTimestampLast: -1},
			batches: []coordapi.BatchCoord{{ByteOffset: 0, ByteLength: 100, BaseOffset: 0, LastOffset: 0, MaxTimestamp: 5}},
		},
		{
			name: "gaps, going back, shrinking timestamps",
			h:    runHeader{object: 1 << 40, maxTimestamp: 1_700_000_000_123, maxTimestampOffset: 41, maxTimestampLast: 49},
			batches: []coordapi.BatchCoord{
				{ByteOffset: 5000, ByteLength: 70, BaseOffset: 40, LastOffset: 49, MaxTimestamp: 1_700_000_000_123},
				{ByteOffset: 100, ByteLength: 1 << 30, BaseOffset: 50, LastOffset: 50, MaxTimestamp: 3},
				{ByteOffset: 1<<30 + 100, ByteLength: 1, BaseOffset: 51, LastOffset: 51 + 1<<31 - 2, MaxTimestamp: -1},
			},
			producers: map[int64]producerState{9: st},
		},
		{
			name: "log append time, two producers",
			h:    runHeader{object: 0, logAppendTime: true, maxTimestamp: 8, maxTimestampOffset: 1 << 50, maxTimestampLast: 1 << 50},
			batches: []coordapi.BatchCoord{
				{ByteOffset: 0, ByteLength: 10, BaseOffset: 1 << 50, LastOffset: 1 << 50, MaxTimestamp: 8, LogAppendTime: true},
				{ByteOffset: 10, ByteLength: 10, BaseOffset: 1<<50 + 1, LastOffset: 1<<50 + 3, MaxTimestamp: 8, LogAppendTime: true},
			},
			producers: map[int64]producerState{1: st, 1 << 60: {epoch: 0, lastUpdateMs: 0, n: 0}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := appendBatchRun([]byte("prefix"), &tt.h, tt.batches)
			v = appendRunProducerCount(v, len(tt.producers))
			var ids []int64
			for id := range tt.producers {
				ids = append(ids, id)
			}
			for _, id := range ids {
				ps := tt.producers[id]
				v = appendRunProducer(v, id, &ps)
			}
			if !strings.HasPrefix(string(v), "prefix") {
				t.Fatal("appendBatchRun overwrote its buffer")
			}
			v = v[len("prefix"):]
			last := tt.batches[len(tt.batches)-1].LastOffset
			h, got, prods, err := decodeBatchRun(last, v, []coordapi.BatchCoord{{ObjectKey: "kept"}})
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
			err = decodeRunProducers(prods, func(id int64, ps producerState) {
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
			if _, _, _, err := decodeBatchRun(last+1, v, nil); err == nil {
				t.Error("decoded with a wrong key")
			}
		})
	}
}

func TestBatchRunDecodeErrors(t *testing.T) {
	good := appendRunProducerCount(appendBatchRun(nil, &runHeader{object: 1},
		[]coordapi.BatchCoord{{ByteOffset: 0, ByteLength: 10, BaseOffset: 5, LastOffset: 6}}), 0)
	header := func(n, base uint64) []byte {
		b := []byte{valueRun, 0, 1}
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
		{"format 1 batch value", []byte{valueV1, 0, 1, 0, 10, 1, 0}, 6},
		{"unknown flags", append([]byte{valueRun, 2}, good[2:]...), 6},
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
			if _, _, _, err := decodeBatchRun(tt.last, tt.v, nil); err == nil {
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
		{"too many seq batches", []byte{1, 1, 0, 0, maxProducerBatches + 1}},
		{"truncated state", []byte{1, 1, 0}},
		{"trailing bytes", []byte{0, 0}},
		{"producer id over int64", append(binary.AppendUvarint([]byte{1}, 1<<63), 0, 0, 0)},
	}
	for _, tt := range prodTests {
		t.Run("producers "+tt.name, func(t *testing.T) {
			if err := decodeRunProducers(tt.section, func(int64, producerState) {}); err == nil {
				t.Fatalf("decoded %x", tt.section)
			}
		})
	}
}

// FuzzBatchRun decodes arbitrary run values: no panic, and whatever
// decodes encodes to a value that decodes the same.
func FuzzBatchRun(f *testing.F) {
	st := producerState{epoch: 1, lastUpdateMs: 5, n: 1, batches: [maxProducerBatches]seqBatch{{0, 3, 7, 9}}}
	v := appendBatchRun(nil, &runHeader{object: 3, logAppendTime: true, maxTimestamp: 9, maxTimestampOffset: 4, maxTimestampLast: 7},
		[]coordapi.BatchCoord{{ByteOffset: 0, ByteLength: 10, BaseOffset: 4, LastOffset: 4, MaxTimestamp: 9},
			{ByteOffset: 20, ByteLength: 5, BaseOffset: 5, LastOffset: 7, MaxTimestamp: 2}})
	v = appendRunProducer(appendRunProducerCount(v, 1), 42, &st)
	f.Add(int64(7), v)
	f.Add(int64(0), []byte{valueRun})
	f.Fuzz(func(t *testing.T, last int64, v []byte) {
		h, batches, section, err := decodeBatchRun(last, v, nil)
		if err != nil {
			return
		}
		type prod struct {
			id int64
			st producerState
		}
		var prods []prod
		if err := decodeRunProducers(section, func(id int64, st producerState) { prods = append(prods, prod{id, st}) }); err != nil {
			return
		}
		again := appendRunProducerCount(appendBatchRun(nil, &h, batches), len(prods))
		for _, p := range prods {
			again = appendRunProducer(again, p.id, &p.st)
		}
		h2, batches2, _, err := decodeBatchRun(last, again, nil)
		if err != nil || h2 != h || !reflect.DeepEqual(batches2, batches) {
			t.Fatalf("re-encoded run decodes to %+v %+v, %v; was %+v %+v", h2, batches2, err, h, batches)
		}
	})
}
