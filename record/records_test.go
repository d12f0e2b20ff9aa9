package record

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// rec assembles one encoded record from raw pieces: a length prefix computed from the
// body plus adjust, then the body.
func rec(adjust int32, body ...[]byte) []byte {
	b := bytes.Join(body, nil)
	return append(appendVarint(nil, int32(len(b))+adjust), b...)
}

func vi(v int32) []byte { return appendVarint(nil, v) }
func vl(v int64) []byte { return appendVarlong(nil, v) }

// body returns the fields of a record with the given offset delta, a key, a value, and
// the given header bytes (count included).
func body(delta int32, headers ...[]byte) [][]byte {
	if len(headers) == 0 {
		headers = [][]byte{vi(0)}
	}
	return append([][]byte{{0}, vl(0), vi(delta), vi(1), []byte("k"), vi(1), []byte("v")}, headers...)
}

func TestRecordsMalformed(t *testing.T) {
	h := func(n, lastDelta int32) Header {
		return Header{NumRecords: n, LastOffsetDelta: lastDelta, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}
	}
	ok0, ok1 := rec(0, body(0)...), rec(0, body(1)...)
	cat := func(bs ...[]byte) []byte { return bytes.Join(bs, nil) }

	cases := []struct {
		name    string
		h       Header
		payload []byte
		is      error // nil: Records succeeds
		n       int   // records seen by fn before the error (or in all)
	}{
		{"ok", h(2, 1), cat(ok0, ok1), nil, 2},
		{"ok-compacted-gap", h(2, 5), cat(ok0, rec(0, body(5)...)), nil, 2},
		{"ok-null-header-value", h(1, 0), rec(0, body(0, vi(1), vi(1), []byte("h"), vi(-1))...), nil, 1},
		{"ok-zero-records", h(0, 0), nil, nil, 0},
		{"too-few-records", h(3, 2), cat(ok0, ok1, []byte{0, 0, 0, 0}), ErrInvalid, 2},
		{"bytes-after-last-record", h(1, 0), cat(ok0, ok1), ErrInvalid, 1},
		{"garbage-after-last-record", h(1, 0), cat(ok0, []byte{0}), ErrInvalid, 1},
		{"count-cannot-fit", h(1<<30, 1<<30-1), cat(ok0, ok1), ErrInvalid, 0},
		{"negative-count", h(-1, 0), cat(ok0), ErrInvalid, 0},
		{"repeated-offset-delta", h(2, 1), cat(ok0, ok0), ErrInvalid, 1},
		{"decreasing-offset-delta", h(2, 1), cat(ok1, ok0), ErrInvalid, 1},
		{"negative-offset-delta", h(1, 0), rec(0, body(-1)...), ErrInvalid, 0},
		{"offset-delta-past-last", h(2, 1), cat(ok0, rec(0, body(2)...)), ErrInvalid, 1},
		{"length-past-end", h(1, 0), rec(1, body(0)...), ErrInvalid, 0},
		{"length-short-of-fields", h(2, 1), cat(rec(-1, body(0)...), ok1), ErrInvalid, 0},
		{"length-past-fields", h(1, 0), rec(1, append(body(0), []byte{0})...), ErrInvalid, 0},
		{"length-negative", h(1, 0), cat(vi(-5), ok0), ErrInvalid, 0},
		{"length-varint-6-bytes", h(1, 0), cat([]byte{0x80, 0x80, 0x80, 0x80, 0x80, 0}, ok0), ErrInvalid, 0},
		{"length-varint-over-32-bits", h(1, 0), cat([]byte{0xfe, 0xff, 0xff, 0xff, 0x7f}, ok0), ErrInvalid, 0},
		{"length-varint-unterminated", h(1, 0), []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80}, ErrInvalid, 0},
		{"key-length-minus-2", h(1, 0), rec(0, []byte{0}, vl(0), vi(0), vi(-2), vi(1), []byte("v"), vi(0)), ErrInvalid, 0},
		{"key-past-record", h(1, 0), rec(0, []byte{0}, vl(0), vi(0), vi(100), vi(1), []byte("v"), vi(0)), ErrInvalid, 0},
		{"value-past-record", h(1, 0), rec(0, []byte{0}, vl(0), vi(0), vi(-1), vi(3), []byte("v"), vi(0)), ErrInvalid, 0},
		{"timestamp-varlong-11-bytes", h(1, 0), rec(0, []byte{0}, bytes.Repeat([]byte{0x80}, 10), []byte{1}, vi(0), vi(-1), vi(-1), vi(0)), ErrInvalid, 0},
		{"header-count-negative", h(1, 0), rec(0, body(0, vi(-1))...), ErrInvalid, 0},
		{"header-count-huge", h(1, 0), rec(0, body(0, vi(1<<30))...), ErrInvalid, 0},
		{"header-count-past-headers", h(1, 0), rec(0, body(0, vi(2), vi(1), []byte("h"), vi(-1))...), ErrInvalid, 0},
		{"header-key-null", h(1, 0), rec(0, body(0, vi(1), vi(-1), vi(-1))...), ErrInvalid, 0},
		{"header-key-past-record", h(1, 0), rec(0, body(0, vi(1), vi(9), vi(-1))...), ErrInvalid, 0},
		{"header-value-minus-2", h(1, 0), rec(0, body(0, vi(1), vi(1), []byte("h"), vi(-2))...), ErrInvalid, 0},
		{"missing-header-count", h(1, 0), rec(0, body(0, nil)...), ErrInvalid, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n := 0
			err := Records(rawBatch(tc.h, tc.payload), func(*Record) error { n++; return nil })
			if (tc.is == nil) != (err == nil) || !errors.Is(err, tc.is) {
				t.Fatalf("Records error %v, want %v", err, tc.is)
			}
			if n != tc.n {
				t.Fatalf("fn called %d times, want %d", n, tc.n)
			}
		})
	}
}

func TestRecordsRefusesBadBatches(t *testing.T) {
	good := mustBuild(t, noProducer, sampleRecords(3, 10, 10))
	mod := func(f func([]byte)) []byte { b := append([]byte{}, good...); f(b); return b }
	cases := []struct {
		name string
		b    []byte
		is   error
	}{
		{"empty", nil, ErrCorrupt},
		{"header-only", good[:HeaderSize], ErrCorrupt},
		{"truncated", good[:len(good)-1], ErrCorrupt},
		{"trailing", append(append([]byte{}, good...), 0), ErrCorrupt},
		{"magic-1", mod(func(b []byte) { b[offMagic] = 1 }), ErrUnsupportedMagic},
		{"codec-6", mod(func(b []byte) { b[offAttributes+1] |= 6 }), ErrUnsupportedCodec},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := Records(tc.b, func(*Record) error { return nil }); !errors.Is(err, tc.is) {
				t.Fatalf("Records error %v, want %v", err, tc.is)
			}
		})
	}
}

// TestRecordsBadCompressedData checks that payloads that do not decompress are refused
// as invalid, for each codec, including broken xerial framing.
func TestRecordsBadCompressedData(t *testing.T) {
	good := rawRecords(Record{Key: []byte("k"), Value: bytes.Repeat([]byte("value"), 100)})
	h := Header{NumRecords: 1, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}
	compressed := func(c Codec, xerial bool) []byte {
		b, err := compress(nil, c, good, xerial)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	xerialHeader := compressed(CodecSnappy, true)[:xerialHeaderSize]
	type tcase struct {
		name    string
		codec   Codec
		payload []byte
	}
	var cases []tcase
	for _, c := range allCodecs[1:] {
		full := compressed(c, false)
		cases = append(cases,
			tcase{"empty", c, nil},
			tcase{"garbage", c, []byte("this is not compressed data at all")},
			tcase{"truncated", c, full[:len(full)/2]},
			tcase{"flipped", c, func() []byte { b := append([]byte{}, full...); b[len(b)/2] ^= 0xff; b[len(b)-3] ^= 0x55; return b }()},
		)
	}
	cases = append(cases,
		tcase{"xerial-header-only", CodecSnappy, xerialHeader},
		tcase{"xerial-short-header", CodecSnappy, xerialHeader[:12]},
		tcase{"xerial-short-length", CodecSnappy, append(append([]byte{}, xerialHeader...), 0, 0)},
		tcase{"xerial-block-past-end", CodecSnappy, append(append([]byte{}, xerialHeader...), 0, 0, 1, 0, 5)},
		tcase{"xerial-negative-length", CodecSnappy, append(append([]byte{}, xerialHeader...), 0xff, 0xff, 0xff, 0xff, 5)},
		tcase{"xerial-bad-block", CodecSnappy, append(append([]byte{}, xerialHeader...), 0, 0, 0, 2, 0xff, 0xff)},
	)
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s/%s", tc.codec, tc.name), func(t *testing.T) {
			hh := h
			hh.Attributes = int16(tc.codec)
			err := Records(rawBatch(hh, tc.payload), func(*Record) error { return nil })
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Records error %v, want ErrInvalid", err)
			}
		})
	}
}

// TestXerialConcatenated checks that a second xerial stream appended to the first (as
// snappy-java's reader accepts) decodes as one.
func TestXerialConcatenated(t *testing.T) {
	r0, r1 := rawRecords(Record{Value: []byte("first")}), rawRecords(Record{OffsetDelta: 1, Value: []byte("second")})
	a, _ := compress(nil, CodecSnappy, r0, true)
	b, _ := compress(nil, CodecSnappy, r1, true)
	batch := rawBatch(Header{NumRecords: 2, LastOffsetDelta: 1, Attributes: int16(CodecSnappy), ProducerID: -1}, append(a, b...))
	got, err := collect(batch)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || string(got[0].Value) != "first" || string(got[1].Value) != "second" {
		t.Fatalf("got %v", got)
	}
}

// TestRecordsLimit checks the decompressed-size limit for each codec at the boundary:
// exactly the decompressed size passes, one byte less is ErrTooLarge.
func TestRecordsLimit(t *testing.T) {
	recs := []Record{{Value: bytes.Repeat([]byte{'z'}, 300_000)}, {Value: bytes.Repeat([]byte{'y'}, 200_000)}}
	size := len(rawRecords(numbered(recs)...))
	for _, codec := range allCodecs[1:] {
		for _, xerial := range []bool{false, true} {
			if xerial && codec != CodecSnappy {
				continue
			}
			t.Run(fmt.Sprintf("%s/xerial=%v", codec, xerial), func(t *testing.T) {
				b := mustBuild(t, BuildOptions{Codec: codec, SnappyXerial: xerial}, recs)
				if len(b) > size/10 {
					t.Fatalf("batch of %d bytes: not compressed enough for the test", len(b))
				}
				for _, tc := range []struct {
					limit int
					is    error
				}{{size, nil}, {size - 1, ErrTooLarge}, {size / 2, ErrTooLarge}, {0, ErrTooLarge}, {size * 4, nil}} {
					n := 0
					err := RecordsLimit(b, tc.limit, func(*Record) error { n++; return nil })
					if (tc.is == nil) != (err == nil) || !errors.Is(err, tc.is) {
						t.Fatalf("limit %d of %d: error %v, want %v", tc.limit, size, err, tc.is)
					}
					if err == nil && n != 2 {
						t.Fatalf("limit %d: %d records", tc.limit, n)
					}
				}
			})
		}
	}
}

// TestRecordsLimitBomb checks that a small batch that would decompress to far more than
// the limit is refused without allocating anything like its decompressed size.
func TestRecordsLimitBomb(t *testing.T) {
	huge := make([]byte, 32<<20) // zeros: compresses to almost nothing
	payload := rawRecords(Record{Value: huge})
	type bomb struct {
		name  string
		codec Codec
		data  []byte
	}
	var bombs []bomb
	for _, codec := range allCodecs[1:] {
		c, err := compress(nil, codec, payload, codec == CodecSnappy)
		if err != nil {
			t.Fatal(err)
		}
		bombs = append(bombs, bomb{codec.String(), codec, c})
	}
	// A zstd frame written as a stream does not declare its size up front.
	var zbuf bytes.Buffer
	zw, _ := zstd.NewWriter(&zbuf, zstd.WithEncoderConcurrency(1))
	zw.Write(payload)
	zw.Close()
	var zh zstd.Header
	if err := zh.Decode(zbuf.Bytes()); err != nil || zh.HasFCS {
		t.Fatalf("streamed zstd frame: has content size %v, %v", zh.HasFCS, err)
	}
	bombs = append(bombs, bomb{"zstd-without-content-size", CodecZstd, zbuf.Bytes()})
	// Raw snappy declares its size up front; xerial blocks each do.
	raw, _ := compress(nil, CodecSnappy, payload, false)
	bombs = append(bombs, bomb{"snappy-raw", CodecSnappy, raw})

	for _, bb := range bombs {
		t.Run(bb.name, func(t *testing.T) {
			b := rawBatch(Header{NumRecords: 1, Attributes: int16(bb.codec), ProducerID: -1}, bb.data)
			var before, after runtimeMem
			before.read()
			err := RecordsLimit(b, 1<<20, func(*Record) error { return nil })
			after.read()
			if !errors.Is(err, ErrTooLarge) {
				t.Fatalf("error %v, want ErrTooLarge", err)
			}
			if grew := after.total - before.total; grew > 8<<20 {
				t.Fatalf("allocated %d MiB refusing a %d byte batch", grew>>20, len(b))
			}
		})
	}
}
