package record

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
)

var allCodecs = []Codec{CodecNone, CodecGzip, CodecSnappy, CodecLZ4, CodecZstd}

// noProducer are the options of a producer without idempotence.
var noProducer = BuildOptions{PartitionLeaderEpoch: -1, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}

func mustBuild(t testing.TB, opts BuildOptions, recs []Record) []byte {
	t.Helper()
	b, err := Build(opts, recs)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	return b
}

// rawBatch encodes h (with magic 2) followed by payload, with the right BatchLength and
// CRC, for batches Build would refuse to write.
func rawBatch(h Header, payload []byte) []byte {
	h.Magic = 2
	h.BatchLength = int32(HeaderSize - lengthOverhead + len(payload))
	b := append(appendHeader(nil, &h), payload...)
	putCRC(b)
	return b
}

// rawRecords concatenates encoded records exactly as given (offset deltas included).
func rawRecords(recs ...Record) []byte {
	var b []byte
	for i := range recs {
		b = appendRecord(b, &recs[i])
	}
	return b
}

// collect returns deep copies of the records of b.
func collect(b []byte) ([]Record, error) {
	var out []Record
	err := Records(b, func(r *Record) error {
		out = append(out, cloneRecord(r))
		return nil
	})
	return out, err
}

func cloneBytes(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}

func cloneRecord(r *Record) Record {
	c := *r
	c.Key, c.Value = cloneBytes(r.Key), cloneBytes(r.Value)
	c.Headers = nil
	for _, h := range r.Headers {
		c.Headers = append(c.Headers, RecordHeader{Key: h.Key, Value: cloneBytes(h.Value)})
	}
	return c
}

// sameRecords compares records, telling nil from empty.
func sameRecords(got, want []Record) error {
	if len(got) != len(want) {
		return fmt.Errorf("got %d records, want %d", len(got), len(want))
	}
	eq := func(a, b []byte) bool { return (a == nil) == (b == nil) && bytes.Equal(a, b) }
	for i := range got {
		g, w := got[i], want[i]
		if g.Attributes != w.Attributes || g.TimestampDelta != w.TimestampDelta || g.OffsetDelta != w.OffsetDelta ||
			!eq(g.Key, w.Key) || !eq(g.Value, w.Value) || len(g.Headers) != len(w.Headers) {
			return fmt.Errorf("record %d: got %s, want %s", i, fmtRecord(&g), fmtRecord(&w))
		}
		for j := range g.Headers {
			if g.Headers[j].Key != w.Headers[j].Key || !eq(g.Headers[j].Value, w.Headers[j].Value) {
				return fmt.Errorf("record %d: got %s, want %s", i, fmtRecord(&g), fmtRecord(&w))
			}
		}
	}
	return nil
}

// numbered returns recs with OffsetDelta set to the index, as Build writes them.
func numbered(recs []Record) []Record {
	out := make([]Record, len(recs))
	for i, r := range recs {
		r.OffsetDelta = int32(i)
		out[i] = r
	}
	return out
}

func fmtBytes(b []byte) string {
	if b == nil {
		return "null"
	}
	if len(b) > 24 {
		return fmt.Sprintf("%q...(%d bytes)", b[:24], len(b))
	}
	return fmt.Sprintf("%q", b)
}

func fmtRecord(r *Record) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "offset-delta=%d ts-delta=%d", r.OffsetDelta, r.TimestampDelta)
	if r.Attributes != 0 {
		fmt.Fprintf(&sb, " attrs=%d", r.Attributes)
	}
	fmt.Fprintf(&sb, " key=%s value=%s", fmtBytes(r.Key), fmtBytes(r.Value))
	for _, h := range r.Headers {
		fmt.Fprintf(&sb, " header[%q]=%s", h.Key, fmtBytes(h.Value))
	}
	return sb.String()
}

// sampleRecords returns n records with a mix of null, empty and filled keys, values and
// headers, and timestamps that are not monotonic.
func sampleRecords(n int, valueSize int, seed uint64) []Record {
	rng := rand.New(rand.NewPCG(seed, seed))
	recs := make([]Record, n)
	for i := range recs {
		r := &recs[i]
		if i > 0 { // the first record's timestamp is the base, as producers write it
			r.TimestampDelta = int64(i*3) - int64(rng.IntN(5))
		}
		switch i % 4 {
		case 0:
			r.Key = nil
		case 1:
			r.Key = []byte{}
		default:
			r.Key = fmt.Appendf(nil, "key-%d", i)
		}
		switch i % 5 {
		case 0:
			r.Value = nil // a tombstone
		case 1:
			r.Value = []byte{}
		default:
			v := make([]byte, valueSize)
			for j := range v { // compressible, not trivially
				v[j] = "abcdefgh"[rng.IntN(8)]
			}
			r.Value = v
		}
		if i%3 == 0 {
			r.Headers = []RecordHeader{{Key: "h1", Value: []byte("v1")}, {Key: "", Value: nil}}
		}
	}
	return recs
}

func be32(b []byte, at int, v uint32) { binary.BigEndian.PutUint32(b[at:], v) }

// runtimeMem samples the bytes allocated so far.
type runtimeMem struct{ total uint64 }

func (m *runtimeMem) read() {
	var s runtime.MemStats
	runtime.ReadMemStats(&s)
	m.total = s.TotalAlloc
}
