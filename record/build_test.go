package record

import "testing"

// KeepOffsetDeltas builds a batch with gaps, as compaction leaves one: the
// records keep their deltas and the header its last delta. (Validate, the
// produce-path check, refuses such a batch: producers never send gaps.)
func TestBuildKeepOffsetDeltas(t *testing.T) {
	for _, codec := range []Codec{CodecNone, CodecZstd} {
		recs := []Record{{Key: []byte("a"), OffsetDelta: 0}, {Key: []byte("b"), OffsetDelta: 3}, {Key: []byte("c"), OffsetDelta: 4}}
		b, err := Build(BuildOptions{Codec: codec, KeepOffsetDeltas: true, LastOffsetDelta: 6, ProducerID: -1}, recs)
		if err != nil {
			t.Fatal(err)
		}
		h, err := ParseHeader(b)
		if err != nil {
			t.Fatalf("%v: %v", codec, err)
		}
		if h.LastOffsetDelta != 6 || h.NumRecords != 3 {
			t.Fatalf("%v: last delta %d, %d records; want 6, 3", codec, h.LastOffsetDelta, h.NumRecords)
		}
		var got []int32
		if err := Records(b, func(r *Record) error { got = append(got, r.OffsetDelta); return nil }); err != nil {
			t.Fatalf("%v: %v", codec, err)
		}
		if len(got) != 3 || got[0] != 0 || got[1] != 3 || got[2] != 4 {
			t.Fatalf("%v: deltas %v, want [0 3 4]", codec, got)
		}
	}
	if _, err := Build(BuildOptions{KeepOffsetDeltas: true}, []Record{{OffsetDelta: 2}, {OffsetDelta: 2}}); err == nil {
		t.Fatal("repeated offset deltas built")
	}
}
