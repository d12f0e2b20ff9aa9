package record

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
)

// produceShape is a batch as producers send it: how many records of what value size.
type produceShape struct {
	name      string
	n         int // records
	valueSize int // bytes of each value, about
}

// produceShapes are the batch shapes the produce benchmarks use: franz-go's default
// 1 MB batches of 1 KiB and of 100-byte records, and the Java client's default
// batch.size of 16 KiB.
var produceShapes = []produceShape{
	{"1KiB-x1000", 1000, 1 << 10},
	{"100B-x10000", 10000, 100},
	{"100B-x150", 150, 100},
}

// produceBatch encodes a batch of shape s with franz-go's own encoding and compressors
// (see kmsgBatch): JSON events keyed by user, one header each, with the variety of real
// payloads (random ids, a few fixed strings), so that they compress 3-6x. It returns
// the batch and the size of its records uncompressed.
func produceBatch(tb testing.TB, codec Codec, s produceShape) (batch []byte, raw int) {
	tb.Helper()
	rng := rand.New(rand.NewPCG(7, uint64(s.n)))
	events := []string{"page_view", "add_to_cart", "checkout", "search", "login", "logout"}
	words := []string{"lorem", "ipsum", "dolor", "sit", "amet", "consectetur", "adipiscing", "elit", "sed", "eiusmod", "tempor"}
	recs := make([]Record, s.n)
	for i := range recs {
		user := rng.IntN(100_000)
		v := fmt.Appendf(nil, `{"id":%d,"user":"user-%d","event":%q,"path":"/products/%d","ts":%d,"ms":%d,"pad":"`,
			rng.Int64N(1<<40), user, events[rng.IntN(len(events))], rng.IntN(5000), 1_700_000_000_000+i*3, rng.IntN(900))
		for len(v) < s.valueSize-2 { // random words: text-like, not trivially compressible
			v = fmt.Appendf(v, "%s%x ", words[rng.IntN(len(words))], rng.Uint32()&0xfff)
		}
		v = append(v[:min(len(v), s.valueSize-2)], `"}`...)
		recs[i] = Record{
			TimestampDelta: int64(i / 10),
			Key:            fmt.Appendf(nil, "user-%d", user),
			Value:          v,
			Headers:        []RecordHeader{{Key: "trace-id", Value: fmt.Appendf(nil, "%016x", rng.Uint64())}},
		}
	}
	opts := BuildOptions{BaseTimestamp: 1_700_000_000_000, ProducerID: 42, ProducerEpoch: 0, BaseSequence: 0, PartitionLeaderEpoch: -1}
	batch = kmsgBatch(tb, codec, opts, recs)
	return batch, len(rawRecords(numbered(recs)...))
}

// BenchmarkProduceCheck measures, for each codec and batch shape, what the produce path
// spends on one batch, in MB/s of uncompressed record bytes:
//
//   - validate: Validate, the header checks and the CRC-32C (all a plain topic paid
//     before compressed batches were checked record by record);
//   - records: Records with a function that does nothing, the full record checks;
//   - check: Records with a nil function, the check a plain topic runs on produce;
//   - keys: Records copying out every key, the pass a kv-indexed topic runs.
//
// compressed-bytes is the batch's size on the wire.
func BenchmarkProduceCheck(b *testing.B) {
	for _, codec := range allCodecs {
		for _, s := range produceShapes {
			batch, raw := produceBatch(b, codec, s)
			if _, err := Validate(batch); err != nil {
				b.Fatal(err)
			}
			run := func(name string, fn func() error) {
				b.Run(fmt.Sprintf("%s/%s/%s", codec, s.name, name), func(b *testing.B) {
					b.SetBytes(int64(raw))
					b.ReportAllocs()
					for b.Loop() {
						if err := fn(); err != nil {
							b.Fatal(err)
						}
					}
					b.ReportMetric(float64(len(batch)), "compressed-bytes")
				})
			}
			run("validate", func() error { _, err := Validate(batch); return err })
			run("records", func() error { return Records(batch, func(*Record) error { return nil }) })
			run("check", func() error { return Records(batch, nil) })
			var keys [][]byte
			run("keys", func() error {
				keys = keys[:0]
				return Records(batch, func(r *Record) error {
					keys = append(keys, bytes.Clone(r.Key))
					return nil
				})
			})
		}
	}
}
