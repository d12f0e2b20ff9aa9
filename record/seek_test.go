package record

import (
	"bytes"
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

// TestParseRecord decodes each record of an uncompressed batch from its own
// bytes as Records frames them, and refuses a cut or padded record.
func TestParseRecord(t *testing.T) {
	recs := []Record{{Key: []byte("a"), Value: []byte("1")}, {Key: nil, Value: nil, TimestampDelta: 5},
		{Key: []byte{}, Value: []byte("x"), Headers: []RecordHeader{{Key: "h", Value: []byte("v")}}}}
	b, err := Build(BuildOptions{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, recs)
	if err != nil {
		t.Fatal(err)
	}
	data := b[HeaderSize:] // the records, back to back
	for i, want := range recs {
		rr := reader{b: data}
		n := int(rr.varint())
		one := data[:rr.off+n]
		data = data[rr.off+n:]
		got, err := ParseRecord(one)
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		if !bytes.Equal(got.Key, want.Key) || (got.Key == nil) != (want.Key == nil) || !bytes.Equal(got.Value, want.Value) ||
			(got.Value == nil) != (want.Value == nil) || got.TimestampDelta != want.TimestampDelta || int(got.OffsetDelta) != i || got.Headers != nil {
			t.Errorf("record %d: %+v, want %+v", i, got, want)
		}
		if _, err := ParseRecord(one[:len(one)-1]); !errors.Is(err, ErrInvalid) {
			t.Errorf("record %d cut short: %v", i, err)
		}
		if _, err := ParseRecord(append(bytes.Clone(one), 0)); !errors.Is(err, ErrInvalid) {
			t.Errorf("record %d padded: %v", i, err)
		}
	}
}
