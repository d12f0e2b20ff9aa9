package record

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
)

// codecCase is a codec and, for snappy, its framing.
type codecCase struct {
	codec  Codec
	xerial bool
}

func (c codecCase) String() string {
	if c.xerial {
		return "snappy-xerial"
	}
	return c.codec.String()
}

var codecCases = []codecCase{{CodecNone, false}, {CodecGzip, false}, {CodecSnappy, false}, {CodecSnappy, true}, {CodecLZ4, false}, {CodecZstd, false}}

// compressedBatch compresses payload, the records' bytes, with c under a header of n
// records and last offset delta n-1: a batch that passes Validate whatever its records
// hold, as a producer's batch would.
func compressedBatch(t *testing.T, c codecCase, n int32, payload []byte) []byte {
	t.Helper()
	data := payload
	if c.codec != CodecNone {
		var err error
		if data, err = compress(nil, c.codec, payload, c.xerial); err != nil {
			t.Fatal(err)
		}
	}
	b := rawBatch(Header{Attributes: int16(c.codec), NumRecords: n, LastOffsetDelta: n - 1, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, data)
	if _, err := Validate(b); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	return b
}

// TestRecordsRejectsBadRecords checks every record-level rule on batches whose header
// and CRC are sound (so Validate alone accepts them, as the produce path did for plain
// topics), for every codec: uncompressed and compressed batches follow the same rules.
func TestRecordsRejectsBadRecords(t *testing.T) {
	recs := func(deltas ...int32) []byte {
		var b []byte
		for _, d := range deltas {
			b = append(b, rec(0, body(d)...)...)
		}
		return b
	}
	cat := func(bs ...[]byte) []byte { return bytes.Join(bs, nil) }
	three := recs(0, 1, 2)
	big := rawRecords(numbered([]Record{{Key: []byte("k"), Value: bytes.Repeat([]byte("0123456789"), 10_000)}, {Value: []byte("v")}})...)
	cases := []struct {
		name    string
		n       int32 // NumRecords, and LastOffsetDelta n-1
		payload []byte
		ok      bool
	}{
		{"ok", 3, three, true},
		{"ok-record-larger-than-window", 2, big, true},
		{"no-records", 1, nil, false},
		{"fewer-records-than-header", 4, three, false},
		{"one-record-short", 2, recs(0), false},
		{"more-records-than-header", 2, three, false},
		{"offset-delta-repeated", 3, recs(0, 1, 1), false},
		{"offset-delta-decreasing", 3, recs(0, 2, 1), false},
		{"offset-delta-skips", 3, recs(0, 2, 3), false},
		{"offset-delta-from-1", 3, recs(1, 2, 3), false},
		{"offset-delta-negative", 1, recs(-1), false},
		{"last-record-truncated", 3, three[:len(three)-3], false},
		{"large-record-truncated", 2, big[:len(big)/2], false},
		{"trailing-byte", 3, cat(three, []byte{0}), false},
		{"trailing-partial-record", 3, cat(three, recs(3)[:5]), false},
		{"record-length-short-of-fields", 1, rec(-1, body(0)...), false},
		{"record-length-past-fields", 1, rec(1, append(body(0), []byte{0})...), false},
		{"record-length-past-end", 1, rec(50, body(0)...), false},
		{"record-length-negative", 1, cat(vi(-3), recs(0)), false},
		{"record-length-huge", 1, cat(vi(1<<30), recs(0)), false},
		{"record-length-varint-too-long", 1, cat([]byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x01}, recs(0)), false},
		{"key-length-below-null", 1, rec(0, []byte{0}, vl(0), vi(0), vi(-2), vi(1), []byte("v"), vi(0)), false},
		{"key-length-past-record", 1, rec(0, []byte{0}, vl(0), vi(0), vi(40), vi(1), []byte("v"), vi(0)), false},
		{"value-length-past-record", 1, rec(0, []byte{0}, vl(0), vi(0), vi(-1), vi(9), []byte("v"), vi(0)), false},
		{"header-count-negative", 1, rec(0, body(0, vi(-1))...), false},
		{"header-count-past-record", 1, rec(0, body(0, vi(3), vi(1), []byte("h"), vi(-1))...), false},
		{"header-key-null", 1, rec(0, body(0, vi(1), vi(-1), vi(-1))...), false},
		{"header-value-below-null", 1, rec(0, body(0, vi(1), vi(1), []byte("h"), vi(-7))...), false},
	}
	for _, c := range codecCases {
		for _, tc := range cases {
			t.Run(c.String()+"/"+tc.name, func(t *testing.T) {
				b := compressedBatch(t, c, tc.n, tc.payload)
				seen := int32(0)
				errFn := Records(b, func(*Record) error { seen++; return nil })
				errNil := Records(b, nil)
				for _, err := range []error{errFn, errNil} {
					if tc.ok != (err == nil) || (err != nil && !errors.Is(err, ErrInvalid)) {
						t.Fatalf("Records: %v, want ok=%v or ErrInvalid", err, tc.ok)
					}
				}
				if tc.ok && seen != tc.n {
					t.Fatalf("%d records, want %d", seen, tc.n)
				}
			})
		}
	}
}

// TestRecordsRejectsBadStreams checks compressed data that is not what its codec
// writes: garbage, cut short, bits flipped, junk after a sound stream, and a batch
// whose codec bits name another codec than the one that compressed it.
func TestRecordsRejectsBadStreams(t *testing.T) {
	payload := rawRecords(numbered(sampleRecords(50, 300, 3))...)
	for _, c := range codecCases[1:] {
		good, err := compress(nil, c.codec, payload, c.xerial)
		if err != nil {
			t.Fatal(err)
		}
		other := CodecZstd
		if c.codec == CodecZstd {
			other = CodecLZ4
		}
		wrong, _ := compress(nil, other, payload, false)
		flip := bytes.Clone(good)
		for i := len(flip) / 3; i < len(flip); i += len(flip) / 7 {
			flip[i] ^= 0xa5
		}
		cases := []struct {
			name string
			data []byte
		}{
			{"garbage", []byte("definitely not a compressed stream of any codec, just text")},
			{"zeros", make([]byte, 300)},
			{"cut-short", good[:len(good)*2/3]},
			{"cut-by-one", good[:len(good)-1]},
			{"bits-flipped", flip},
			{"junk-after-stream", append(bytes.Clone(good), "junk after the end"...)},
			{"other-codec", wrong},
		}
		for _, tc := range cases {
			if tc.name == "bits-flipped" && c.codec == CodecSnappy {
				continue // snappy has no checksum: flipped literals are other records (the batch CRC guards them)
			}
			t.Run(c.String()+"/"+tc.name, func(t *testing.T) {
				b := rawBatch(Header{Attributes: int16(c.codec), NumRecords: 50, LastOffsetDelta: 49, ProducerID: -1}, tc.data)
				if _, err := Validate(b); err != nil {
					t.Fatalf("Validate: %v", err)
				}
				for _, fn := range []func(*Record) error{nil, func(*Record) error { return nil }} {
					if err := Records(b, fn); !errors.Is(err, ErrInvalid) {
						t.Fatalf("Records: %v, want ErrInvalid", err)
					}
				}
			})
		}
	}
}

// TestRecordsStreamsLargeRecords decodes records around and far past the window size,
// in batches from Build and from franz-go's compressors (whose lz4 blocks are 4 MiB),
// and reads each back with RecordAt.
func TestRecordsStreamsLargeRecords(t *testing.T) {
	sizes := []int{0, 100, windowSize - 20, windowSize, windowSize + 1, 300 << 10, 7, 2<<20 + 3, 50, 3 * windowSize}
	var recs []Record
	for i, n := range sizes {
		v := make([]byte, n)
		for j := range v {
			v[j] = byte(i*7 + j%251)
		}
		recs = append(recs, Record{TimestampDelta: int64(i), Key: fmt.Appendf(nil, "key-%d", i), Value: v,
			Headers: []RecordHeader{{Key: "n", Value: fmt.Appendf(nil, "%d", n)}}})
	}
	want := numbered(recs)
	for _, c := range codecCases {
		for _, franz := range []bool{false, true} {
			if franz && c.xerial {
				continue // franz-go frames xerial only when it merges batches
			}
			t.Run(fmt.Sprintf("%s/franz=%v", c, franz), func(t *testing.T) {
				var b []byte
				if franz {
					b = kmsgBatch(t, c.codec, noProducer, recs)
				} else {
					b = mustBuild(t, BuildOptions{Codec: c.codec, SnappyXerial: c.xerial, ProducerID: -1}, recs)
				}
				got, err := collect(b)
				if err != nil {
					t.Fatal(err)
				}
				if err := sameRecords(got, want); err != nil {
					t.Fatal(err)
				}
				if err := Records(b, nil); err != nil {
					t.Fatalf("Records(nil): %v", err)
				}
				for i := range want {
					err := RecordAt(b, int32(i), func(r *Record) error { return sameRecords([]Record{cloneRecord(r)}, want[i:i+1]) })
					if err != nil {
						t.Fatalf("RecordAt(%d): %v", i, err)
					}
				}
			})
		}
	}
}

// TestRecordsMemory checks that checking a batch does not allocate anything like its
// decompressed size: 8 MiB of 1 KiB records stream through the window. Raw snappy,
// which is decoded whole, is left out.
func TestRecordsMemory(t *testing.T) {
	rs := sampleRecords(8<<10, 1<<10, 9)
	raw := len(rawRecords(numbered(rs)...))
	for _, c := range codecCases {
		if c.codec == CodecSnappy && !c.xerial {
			continue
		}
		t.Run(c.String(), func(t *testing.T) {
			b := mustBuild(t, BuildOptions{Codec: c.codec, SnappyXerial: c.xerial, ProducerID: -1}, rs)
			if err := Records(b, nil); err != nil { // warm the pools
				t.Fatal(err)
			}
			var before, after runtimeMem
			before.read()
			n := 0
			err := Records(b, func(*Record) error { n++; return nil })
			after.read()
			if err != nil || n != len(rs) {
				t.Fatalf("Records: %d records, %v", n, err)
			}
			grew := after.total - before.total
			t.Logf("allocated %d KiB checking %d KiB of records", grew>>10, raw>>10)
			if grew > 1<<20 {
				t.Fatalf("allocated %d KiB checking %d KiB of records", grew>>10, raw>>10)
			}
		})
	}
}

// TestRecordsBombOfSmallRecords checks the limit against a batch of many small records
// (a single huge record is TestRecordsLimitBomb's): it stops at the limit, with
// ErrTooLarge, having allocated little.
func TestRecordsBombOfSmallRecords(t *testing.T) {
	rs := numbered(make([]Record, 1<<18))
	payload := rawRecords(rs...)
	n := int32(len(rs))
	for _, c := range codecCases[1:] {
		t.Run(c.String(), func(t *testing.T) {
			data, err := compress(nil, c.codec, payload, c.xerial)
			if err != nil {
				t.Fatal(err)
			}
			b := rawBatch(Header{Attributes: int16(c.codec), NumRecords: n, LastOffsetDelta: n - 1, ProducerID: -1}, data)
			if err := RecordsLimit(b, len(payload), nil); err != nil {
				t.Fatalf("at a limit of its size: %v", err)
			}
			var before, after runtimeMem
			before.read()
			err = RecordsLimit(b, 256<<10, nil)
			after.read()
			if !errors.Is(err, ErrTooLarge) {
				t.Fatalf("%d KiB of records under a 256 KiB limit: %v, want ErrTooLarge", len(payload)>>10, err)
			}
			grew := after.total - before.total
			t.Logf("allocated %d KiB refusing a %d KiB batch of %d KiB of records", grew>>10, len(b)>>10, len(payload)>>10)
			if grew > 1<<20 {
				t.Fatalf("allocated %d KiB refusing a %d KiB batch", grew>>10, len(b)>>10)
			}
		})
	}
}
