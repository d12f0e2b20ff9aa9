package record

import (
	"errors"
	"fmt"
	"testing"
)

func TestRecordAt(t *testing.T) {
	var recs []Record
	for i := range 50 {
		recs = append(recs, Record{Key: fmt.Appendf(nil, "k%d", i), Value: fmt.Appendf(nil, "value-%d", i),
			Headers: []RecordHeader{{Key: "h", Value: []byte{byte(i)}}}})
	}
	for _, codec := range []Codec{CodecNone, CodecGzip, CodecSnappy, CodecLZ4, CodecZstd} {
		t.Run(codec.String(), func(t *testing.T) {
			b, err := Build(BuildOptions{Codec: codec, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, BaseTimestamp: 1000}, recs)
			if err != nil {
				t.Fatal(err)
			}
			for _, i := range []int32{0, 1, 25, 49} {
				var got Record
				err := RecordAt(b, i, func(r *Record) error {
					got = Record{OffsetDelta: r.OffsetDelta, Key: append([]byte(nil), r.Key...), Value: append([]byte(nil), r.Value...)}
					return nil
				})
				if err != nil {
					t.Fatalf("record %d: %v", i, err)
				}
				if got.OffsetDelta != i || string(got.Key) != string(recs[i].Key) || string(got.Value) != string(recs[i].Value) {
					t.Fatalf("record %d: got delta %d key %q value %q", i, got.OffsetDelta, got.Key, got.Value)
				}
			}
			for _, bad := range []int32{-1, 50} {
				if err := RecordAt(b, bad, func(*Record) error { return nil }); !errors.Is(err, ErrInvalid) {
					t.Fatalf("record %d: err %v, want ErrInvalid", bad, err)
				}
			}
		})
	}
}

func FuzzRecordAt(f *testing.F) {
	b, _ := Build(BuildOptions{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, []Record{{Key: []byte("a"), Value: []byte("b")}, {Value: []byte("c")}})
	f.Add(b, int32(1))
	f.Fuzz(func(t *testing.T, b []byte, i int32) {
		_ = RecordAt(b, i, func(*Record) error { return nil })
	})
}
