package record

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
)

func TestBuildRoundTrip(t *testing.T) {
	cases := []struct {
		name string
		opts BuildOptions
		recs []Record
	}{
		{"one-null-record", noProducer, []Record{{}}},
		{"one-empty-record", noProducer, []Record{{Key: []byte{}, Value: []byte{}}}},
		{"small", BuildOptions{BaseTimestamp: 1_700_000_000_000, ProducerID: 7, ProducerEpoch: 2, BaseSequence: 40}, sampleRecords(10, 50, 1)},
		{"negative-deltas", noProducer, []Record{{TimestampDelta: 0}, {TimestampDelta: -5}, {TimestampDelta: 3}}},
		{"many-headers", noProducer, []Record{{Value: []byte("v"), Headers: []RecordHeader{
			{Key: "a", Value: []byte("1")}, {Key: "b", Value: nil}, {Key: "c", Value: []byte{}}, {Key: "", Value: []byte("x")},
		}}}},
		{"transactional", BuildOptions{Attributes: AttrTransactional, ProducerID: 1, BaseSequence: 0, BaseTimestamp: 10}, sampleRecords(3, 5, 2)},
		{"big-values", noProducer, sampleRecords(40, 3000, 3)}, // > 32 KiB: several xerial blocks
		{"one-large-value", noProducer, []Record{{Key: []byte("k"), Value: bytes.Repeat([]byte("0123456789"), 20_000)}}},
	}
	for _, tc := range cases {
		for _, codec := range allCodecs {
			for _, xerial := range []bool{false, true} {
				if xerial && codec != CodecSnappy {
					continue
				}
				name := fmt.Sprintf("%s/%s", tc.name, codec)
				if xerial {
					name += "-xerial"
				}
				t.Run(name, func(t *testing.T) {
					opts := tc.opts
					opts.Codec, opts.SnappyXerial = codec, xerial
					b := mustBuild(t, opts, tc.recs)
					if codec == CodecSnappy && bytes.HasPrefix(b[HeaderSize:], xerialMagic) != xerial {
						t.Fatalf("xerial framing = %v, want %v", !xerial, xerial)
					}
					h, err := Validate(b)
					if err != nil {
						t.Fatalf("Validate: %v", err)
					}
					wantMax := opts.BaseTimestamp + tc.recs[0].TimestampDelta
					for _, r := range tc.recs {
						wantMax = max(wantMax, opts.BaseTimestamp+r.TimestampDelta)
					}
					want := Header{
						BaseOffset: opts.BaseOffset, BatchLength: int32(len(b) - 12), PartitionLeaderEpoch: opts.PartitionLeaderEpoch,
						Magic: 2, CRC: h.CRC, Attributes: opts.Attributes | int16(codec), LastOffsetDelta: int32(len(tc.recs) - 1),
						BaseTimestamp: opts.BaseTimestamp, MaxTimestamp: wantMax, ProducerID: opts.ProducerID,
						ProducerEpoch: opts.ProducerEpoch, BaseSequence: opts.BaseSequence, NumRecords: int32(len(tc.recs)),
					}
					if h != want {
						t.Fatalf("header\n got %+v\nwant %+v", h, want)
					}
					if h.Codec() != codec || h.Size() != len(b) || h.Transactional() != (opts.Attributes&AttrTransactional != 0) {
						t.Fatalf("accessors: codec %v size %d transactional %v", h.Codec(), h.Size(), h.Transactional())
					}
					got, err := collect(b)
					if err != nil {
						t.Fatalf("Records: %v", err)
					}
					if err := sameRecords(got, numbered(tc.recs)); err != nil {
						t.Fatal(err)
					}
				})
			}
		}
	}
}

func TestBuildNumbersRecords(t *testing.T) {
	b := mustBuild(t, noProducer, []Record{{OffsetDelta: 5}, {OffsetDelta: 5}, {OffsetDelta: -1}})
	var deltas []int32
	if err := Records(b, func(r *Record) error { deltas = append(deltas, r.OffsetDelta); return nil }); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(deltas) != "[0 1 2]" {
		t.Fatalf("offset deltas %v, want [0 1 2]", deltas)
	}
}

func TestBuildErrors(t *testing.T) {
	cases := []struct {
		name string
		opts BuildOptions
		recs []Record
		is   error
	}{
		{"no-records", BuildOptions{}, nil, nil},
		{"codec-in-attributes", BuildOptions{Attributes: 2}, []Record{{}}, nil},
		{"unknown-codec", BuildOptions{Codec: 5}, []Record{{}}, ErrUnsupportedCodec},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Build(tc.opts, tc.recs)
			if err == nil || (tc.is != nil && !errors.Is(err, tc.is)) {
				t.Fatalf("Build error %v, want %v", err, tc.is)
			}
		})
	}
}

func TestCodecString(t *testing.T) {
	for c, want := range map[Codec]string{CodecNone: "none", CodecGzip: "gzip", CodecSnappy: "snappy", CodecLZ4: "lz4", CodecZstd: "zstd", 6: "codec(6)"} {
		if got := c.String(); got != want {
			t.Errorf("Codec(%d).String() = %q, want %q", c, got, want)
		}
	}
}

// TestRecordsStopsOnCallbackError checks that fn's error ends iteration and comes back
// unchanged.
func TestRecordsStopsOnCallbackError(t *testing.T) {
	stop := errors.New("stop")
	for _, codec := range allCodecs {
		b := mustBuild(t, BuildOptions{Codec: codec}, sampleRecords(10, 10, 4))
		calls := 0
		err := Records(b, func(*Record) error {
			if calls++; calls == 3 {
				return stop
			}
			return nil
		})
		if err != stop || calls != 3 {
			t.Fatalf("%s: err %v after %d calls, want stop after 3", codec, err, calls)
		}
	}
}

// TestRecordsAliasing checks that the slices handed to fn cannot be extended into the
// next field, and that records decoded after pooled reuse are still right.
func TestRecordsAliasing(t *testing.T) {
	recs := []Record{{Key: []byte("k1"), Value: []byte("v1")}, {Key: []byte("k2"), Value: []byte("v2")}}
	for _, codec := range allCodecs {
		b := mustBuild(t, BuildOptions{Codec: codec}, recs)
		for range 3 { // reuse pooled state
			i := 0
			err := Records(b, func(r *Record) error {
				if cap(r.Key) != len(r.Key) || cap(r.Value) != len(r.Value) {
					return fmt.Errorf("record %d: key/value capacity reaches past them", i)
				}
				_ = append(r.Key, 'X')
				if want := recs[i].Value; !bytes.Equal(r.Value, want) {
					return fmt.Errorf("record %d value %q, want %q", i, r.Value, want)
				}
				i++
				return nil
			})
			if err != nil {
				t.Fatalf("%s: %v", codec, err)
			}
		}
	}
}

func TestBuildRefusesAllNegativeDeltas(t *testing.T) {
	if _, err := Build(noProducer, []Record{{TimestampDelta: -1}, {TimestampDelta: -3}}); err == nil {
		t.Fatal("Build accepted a batch whose timestamps are all before its base")
	}
	b, err := Build(BuildOptions{Attributes: AttrLogAppendTime, ProducerID: -1}, []Record{{TimestampDelta: -1}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Validate(b); err != nil {
		t.Fatal(err)
	}
}

// TestRecordsHeaderKeysOutliveCall checks that header keys kept from fn stay right
// after Records returns and after later calls reuse its state.
func TestRecordsHeaderKeysOutliveCall(t *testing.T) {
	var recs []Record
	for i := range 40 {
		var hs []RecordHeader
		for j := range i % 20 {
			hs = append(hs, RecordHeader{Key: fmt.Sprintf("key-%d-%d", j, i%3), Value: []byte("v")})
		}
		recs = append(recs, Record{Headers: hs})
	}
	b := mustBuild(t, BuildOptions{Codec: CodecLZ4}, recs)
	var kept [][]string
	for range 2 {
		kept = kept[:0]
		err := Records(b, func(r *Record) error {
			var ks []string
			for _, h := range r.Headers {
				ks = append(ks, h.Key)
			}
			kept = append(kept, ks)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	other := mustBuild(t, BuildOptions{}, []Record{{Headers: []RecordHeader{{Key: "zzzzzzzzz-0"}, {Key: "zzzzzzzzz-1"}}}})
	if err := Records(other, func(*Record) error { return nil }); err != nil {
		t.Fatal(err)
	}
	for i, ks := range kept {
		for j, k := range ks {
			if want := recs[i].Headers[j].Key; k != want {
				t.Fatalf("record %d header %d: kept key %q, want %q", i, j, k, want)
			}
		}
	}
}
