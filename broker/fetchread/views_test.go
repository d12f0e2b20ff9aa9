package fetchread

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/record"
)

// viewBatch builds a batch at base of records with keys ("" for none).
func viewBatch(t *testing.T, base int64, codec record.Codec, keys ...string) []byte {
	t.Helper()
	var recs []record.Record
	for i, k := range keys {
		r := record.Record{TimestampDelta: int64(i), Value: fmt.Appendf(nil, "v%d", base+int64(i))}
		if k != "" {
			r.Key = []byte(k)
		}
		recs = append(recs, r)
	}
	b, err := record.Build(record.BuildOptions{Codec: codec, BaseOffset: base, BaseTimestamp: 1000, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, recs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// viewOffsets returns "offset:key" of every record in data and each
// batch's offset range, checking every batch.
func viewOffsets(t *testing.T, data []byte) (recs, batches []string) {
	t.Helper()
	for len(data) > 0 {
		h, err := record.ParseHeader(data)
		if err != nil || h.Size() > len(data) {
			t.Fatalf("batch header: %v", err)
		}
		if _, err := record.ValidateStored(data[:h.Size()]); err != nil {
			t.Fatal(err)
		}
		batches = append(batches, fmt.Sprintf("%d-%d", h.BaseOffset, h.BaseOffset+int64(h.LastOffsetDelta)))
		err = record.Records(data[:h.Size()], func(r *record.Record) error {
			recs = append(recs, fmt.Sprintf("%d:%s", h.BaseOffset+int64(r.OffsetDelta), r.Key))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		data = data[h.Size():]
	}
	return recs, batches
}

// TestFilterView: a view's fetch keeps its key's records with their
// offsets, in every codec, drops keyless and other keys' records, keeps a
// batch of only its key byte for byte, and keeps the last batch as a bare
// header when nothing of it matches, so the consumer moves on.
func TestFilterView(t *testing.T) {
	for _, codec := range []record.Codec{record.CodecNone, record.CodecGzip, record.CodecSnappy, record.CodecLZ4, record.CodecZstd} {
		t.Run(codec.String(), func(t *testing.T) {
			b1 := viewBatch(t, 0, codec, "A", "B", "A", "")
			b2 := viewBatch(t, 4, codec, "A", "A")
			b3 := viewBatch(t, 6, codec, "B", "C")
			data := append(append(append([]byte{}, b1...), b2...), b3...)
			for _, tc := range []struct {
				key           string
				recs, batches string
			}{
				{"A", "[0:A 2:A 4:A 5:A]", "[0-3 4-5 6-7]"}, // b3 emptied, kept as the last
				{"B", "[1:B 6:B]", "[0-3 6-7]"},
				{"C", "[7:C]", "[6-7]"},
				{"Z", "[]", "[6-7]"},
			} {
				recs, batches := viewOffsets(t, filterView(data, []byte(tc.key)))
				if fmt.Sprint(recs) != tc.recs && !(len(recs) == 0 && tc.recs == "[]") || fmt.Sprint(batches) != tc.batches {
					t.Errorf("key %s: records %v in batches %v, want %s in %s", tc.key, recs, batches, tc.recs, tc.batches)
				}
			}
			onlyA := append(append([]byte{}, b2...), viewBatch(t, 6, codec, "A")...)
			if got := filterView(onlyA, []byte("A")); !bytes.Equal(got, onlyA) || &got[0] != &onlyA[0] {
				t.Error("batches of only the view's key are not passed through as they are, uncopied")
			}
		})
	}
}

// TestSparseParts: exact reads for a key in few batches per range, cache
// chunks for one packed into long runs of batches.
func TestSparseParts(t *testing.T) {
	const chunk = 4 << 20
	tests := []struct {
		name    string
		batches int
		ranges  []int // lengths
		want    bool
	}{
		{"one small batch", 1, []int{12 << 10}, true},
		{"a batch per range", 10, []int{12 << 10, 12 << 10, 12 << 10, 12 << 10, 12 << 10, 12 << 10, 12 << 10, 12 << 10, 12 << 10, 12 << 10}, true},
		{"two small batches back to back", 2, []int{24 << 10}, true},
		{"long runs of batches", 16, []int{900 << 10, 900 << 10}, false},
		{"runs of small batches", 16, []int{96 << 10, 96 << 10}, true},
		{"no range", 0, nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := &Part{batches: make([]coordapi.BatchCoord, tc.batches)}
			var reads []rangeRead
			for _, l := range tc.ranges {
				reads = append(reads, rangeRead{part: 0, length: l})
			}
			if got := sparseParts([]*Part{p}, reads, chunk)[0]; got != tc.want {
				t.Errorf("sparse = %v, want %v", got, tc.want)
			}
		})
	}
}
