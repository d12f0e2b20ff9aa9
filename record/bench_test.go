package record

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// benchBatch builds a batch of 16 KiB of uncompressed records: JSON events of about
// 200 bytes, keyed by user, with one header, as an application might produce them.
func benchBatch(b *testing.B, codec Codec, xerial bool) (batch []byte, rawSize int) {
	rng := rand.New(rand.NewPCG(1, 2))
	events := []string{"page_view", "add_to_cart", "checkout", "search", "login"}
	var recs []Record
	for size := 0; size < 16<<10; {
		user := rng.IntN(10_000)
		r := Record{
			TimestampDelta: int64(len(recs) * 3),
			Key:            fmt.Appendf(nil, "user-%d", user),
			Value: fmt.Appendf(nil, `{"id":%d,"user":"user-%d","event":%q,"path":"/products/%d","ts":%d,`+
				`"agent":"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36","ms":%d}`,
				rng.Int64N(1<<40), user, events[rng.IntN(len(events))], rng.IntN(5000), 1_700_000_000_000+len(recs)*3, rng.IntN(900)),
			Headers: []RecordHeader{{Key: "trace-id", Value: fmt.Appendf(nil, "%016x", rng.Uint64())}},
		}
		r.OffsetDelta = int32(len(recs))
		size += len(appendRecord(nil, &r))
		recs = append(recs, r)
	}
	batch = mustBuild(b, BuildOptions{Codec: codec, SnappyXerial: xerial, ProducerID: -1}, recs)
	return batch, len(rawRecords(recs...))
}

func benchCases() []struct {
	name   string
	codec  Codec
	xerial bool
} {
	return []struct {
		name   string
		codec  Codec
		xerial bool
	}{
		{"none", CodecNone, false}, {"gzip", CodecGzip, false}, {"snappy", CodecSnappy, false},
		{"snappy-xerial", CodecSnappy, true}, {"lz4", CodecLZ4, false}, {"zstd", CodecZstd, false},
	}
}

// BenchmarkValidate measures the header checks and the CRC-32C over a 16 KiB batch.
func BenchmarkValidate(b *testing.B) {
	batch, _ := benchBatch(b, CodecNone, false)
	b.SetBytes(int64(len(batch)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Validate(batch); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRecords measures decompressing and iterating a batch of 16 KiB of records
// for each codec; throughput is of uncompressed record bytes.
func BenchmarkRecords(b *testing.B) {
	for _, bc := range benchCases() {
		b.Run(bc.name, func(b *testing.B) {
			batch, raw := benchBatch(b, bc.codec, bc.xerial)
			b.SetBytes(int64(raw))
			b.ReportAllocs()
			b.ReportMetric(float64(len(batch)), "batch-bytes")
			var n int
			for b.Loop() {
				if err := Records(batch, func(r *Record) error { n += len(r.Value); return nil }); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
