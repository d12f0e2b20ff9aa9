package record

import (
	"encoding/binary"
	"errors"
	"testing"
)

func TestParseHeader(t *testing.T) {
	good := mustBuild(t, BuildOptions{BaseOffset: 42, PartitionLeaderEpoch: 3, Attributes: AttrTransactional | AttrLogAppendTime,
		Codec: CodecZstd, BaseTimestamp: 100, ProducerID: 9, ProducerEpoch: 1, BaseSequence: 5}, sampleRecords(4, 10, 5))
	legacy := func(magic byte) []byte {
		b := append([]byte{}, good[:26]...)
		b[offMagic] = magic
		be32(b, offBatchLength, 14)
		return b
	}
	cases := []struct {
		name string
		b    []byte
		is   error
	}{
		{"ok", good, nil},
		{"header-only", good[:HeaderSize], nil},
		{"empty", nil, ErrShort},
		{"before-magic", good[:16], ErrShort},
		{"before-end-of-header", good[:HeaderSize-1], ErrShort},
		{"magic-0", legacy(0), ErrUnsupportedMagic},
		{"magic-1", legacy(1), ErrUnsupportedMagic},
		{"magic-3", legacy(3), ErrUnsupportedMagic},
		{"length-too-small", func() []byte { b := append([]byte{}, good...); be32(b, offBatchLength, 48); return b }(), ErrCorrupt},
		{"length-negative", func() []byte { b := append([]byte{}, good...); be32(b, offBatchLength, 0xffffffff); return b }(), ErrCorrupt},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h, err := ParseHeader(tc.b)
			if !errors.Is(err, tc.is) || (tc.is == nil) != (err == nil) {
				t.Fatalf("ParseHeader error %v, want %v", err, tc.is)
			}
			if err == nil {
				want := Header{BaseOffset: 42, BatchLength: int32(len(good) - 12), PartitionLeaderEpoch: 3, Magic: 2,
					CRC: binary.BigEndian.Uint32(good[17:]), Attributes: int16(CodecZstd) | AttrTransactional | AttrLogAppendTime,
					LastOffsetDelta: 3, BaseTimestamp: 100, MaxTimestamp: h.MaxTimestamp, ProducerID: 9, ProducerEpoch: 1,
					BaseSequence: 5, NumRecords: 4}
				if h != want {
					t.Fatalf("got %+v\nwant %+v", h, want)
				}
				if !h.LogAppendTime() || !h.Transactional() || h.Control() || h.Codec() != CodecZstd {
					t.Fatalf("attribute accessors wrong for %#x", h.Attributes)
				}
			}
			if errors.Is(err, ErrUnsupportedMagic) && (h.Magic != int8(tc.b[offMagic]) || h.BatchLength != 14 || h.BaseOffset != 42) {
				t.Fatalf("legacy header not filled in: %+v", h)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	base := func() Header {
		return Header{LastOffsetDelta: 1, BaseTimestamp: 1000, MaxTimestamp: 1003, ProducerID: -1, ProducerEpoch: -1,
			BaseSequence: -1, NumRecords: 2, PartitionLeaderEpoch: -1}
	}
	payload := rawRecords(Record{Value: []byte("a")}, Record{OffsetDelta: 1, TimestampDelta: 3, Value: []byte("b")})
	with := func(f func(*Header)) []byte { h := base(); f(&h); return rawBatch(h, payload) }
	corruptAt := func(i int) []byte { b := with(func(*Header) {}); b[i] ^= 0x40; return b }

	cases := []struct {
		name string
		b    []byte
		is   error
	}{
		{"ok", with(func(*Header) {}), nil},
		{"ok-idempotent", with(func(h *Header) { h.ProducerID, h.ProducerEpoch, h.BaseSequence = 5, 0, 0 }), nil},
		{"ok-sequence-near-wrap", with(func(h *Header) { h.ProducerID, h.ProducerEpoch, h.BaseSequence = 5, 0, 1<<31-1 }), nil},
		{"ok-transactional", with(func(h *Header) {
			h.Attributes, h.ProducerID, h.ProducerEpoch, h.BaseSequence = AttrTransactional, 5, 0, 0
		}), nil},
		{"ok-control", with(func(h *Header) { h.Attributes = AttrControl }), nil},
		{"ok-no-timestamps", with(func(h *Header) { h.BaseTimestamp, h.MaxTimestamp = -1, -1 }), nil},
		{"ok-max-unset", with(func(h *Header) { h.MaxTimestamp = -1 }), nil},
		{"ok-log-append-time-before-base", with(func(h *Header) { h.Attributes, h.MaxTimestamp = AttrLogAppendTime, 10 }), nil},
		{"ok-delete-horizon-after-max", with(func(h *Header) { h.Attributes, h.BaseTimestamp = AttrDeleteHorizon, 5000 }), nil},
		{"ok-base-offset-and-epoch-ignored", with(func(h *Header) { h.BaseOffset, h.PartitionLeaderEpoch = 1<<40, 77 }), nil},
		{"ok-producer-id-below-minus-one", with(func(h *Header) { h.ProducerID = -2 }), nil}, // Kafka: no producer id

		{"empty", nil, ErrCorrupt},
		{"16-bytes", with(func(*Header) {})[:16], ErrCorrupt},
		{"shorter-than-header", with(func(*Header) {})[:HeaderSize-1], ErrCorrupt},
		{"truncated", func() []byte { b := with(func(*Header) {}); return b[:len(b)-1] }(), ErrCorrupt},
		{"trailing-byte", append(with(func(*Header) {}), 0), ErrCorrupt},
		{"length-below-header", func() []byte { b := with(func(*Header) {}); be32(b, offBatchLength, 10); return b }(), ErrCorrupt},
		{"crc-field", corruptAt(offCRC), ErrCorrupt},
		{"crc-covers-attributes", corruptAt(offAttributes + 1), ErrCorrupt},
		{"crc-covers-records", corruptAt(HeaderSize + 3), ErrCorrupt},
		{"crc-covers-record-count", corruptAt(offNumRecords + 3), ErrCorrupt},
		{"magic-1", func() []byte { b := with(func(*Header) {}); b[offMagic] = 1; return b }(), ErrUnsupportedMagic},
		{"magic-0-short", []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 14, 1, 2, 3, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, ErrUnsupportedMagic},
		{"codec-5", with(func(h *Header) { h.Attributes = 5 }), ErrUnsupportedCodec},
		{"codec-7", with(func(h *Header) { h.Attributes = 7 | AttrTransactional }), ErrUnsupportedCodec},
		{"negative-last-offset-delta", with(func(h *Header) { h.LastOffsetDelta = -1 }), ErrInvalid},
		{"zero-records", with(func(h *Header) { h.NumRecords, h.LastOffsetDelta = 0, 0 }), ErrInvalid},
		{"negative-records", with(func(h *Header) { h.NumRecords = -1 }), ErrInvalid},
		{"count-below-offset-range", with(func(h *Header) { h.LastOffsetDelta = 2 }), ErrInvalid},
		{"count-above-offset-range", with(func(h *Header) { h.LastOffsetDelta = 0 }), ErrInvalid},
		{"producer-negative-sequence", with(func(h *Header) { h.ProducerID, h.ProducerEpoch, h.BaseSequence = 5, 0, -1 }), ErrInvalid},
		{"producer-negative-epoch", with(func(h *Header) { h.ProducerID, h.ProducerEpoch, h.BaseSequence = 5, -1, 0 }), ErrInvalid},
		{"transactional-without-producer", with(func(h *Header) { h.Attributes = AttrTransactional }), ErrInvalid},
		{"max-before-base", with(func(h *Header) { h.MaxTimestamp = 999 }), ErrInvalid},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h, err := Validate(tc.b)
			if (tc.is == nil) != (err == nil) || !errors.Is(err, tc.is) {
				t.Fatalf("Validate error %v, want %v", err, tc.is)
			}
			if err == nil && (h.Size() != len(tc.b) || h.Magic != 2) {
				t.Fatalf("header %+v for %d bytes", h, len(tc.b))
			}
		})
	}
}

// TestErrorKinds checks which sentinels each kind of error matches: ErrInvalid is a
// kind of ErrCorrupt, the others stand alone.
func TestErrorKinds(t *testing.T) {
	sentinels := []error{ErrShort, ErrCorrupt, ErrInvalid, ErrUnsupportedMagic, ErrUnsupportedCodec, ErrTooLarge}
	for _, kind := range sentinels {
		err := errorf(kind, "x %d", 1)
		for _, other := range sentinels {
			want := other == kind || (kind == ErrInvalid && other == ErrCorrupt)
			if errors.Is(err, other) != want {
				t.Errorf("errors.Is(%v, %v) = %v, want %v", err, other, !want, want)
			}
		}
		if got, want := err.Error(), kind.Error()+": x 1"; got != want {
			t.Errorf("message %q, want %q", got, want)
		}
	}
}

// TestValidateStored checks the record-count rule of stored batches: gaps
// and empty batches pass, more records than offsets do not; Validate
// refuses both as a produced batch.
func TestValidateStored(t *testing.T) {
	recs := []Record{{OffsetDelta: 0, Value: []byte("a")}, {OffsetDelta: 4, Value: []byte("b")}}
	gapped, err := Build(BuildOptions{KeepOffsetDeltas: true, LastOffsetDelta: 9, ProducerID: -1, BaseSequence: -1, ProducerEpoch: -1}, recs)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ValidateStored(gapped); err != nil {
		t.Errorf("gapped batch: %v", err)
	}
	if _, err := Validate(gapped); !errors.Is(err, ErrInvalid) {
		t.Errorf("Validate of a gapped batch: %v, want ErrInvalid", err)
	}
	// Two records claimed over one offset: refused by both.
	over := append([]byte(nil), gapped...)
	binary.BigEndian.PutUint32(over[offLastOffsetDelta:], 0)
	putCRC(over)
	if _, err := ValidateStored(over); !errors.Is(err, ErrInvalid) {
		t.Errorf("more records than offsets: %v, want ErrInvalid", err)
	}
	if _, err := Validate(over); !errors.Is(err, ErrInvalid) {
		t.Errorf("Validate of more records than offsets: %v, want ErrInvalid", err)
	}
}
