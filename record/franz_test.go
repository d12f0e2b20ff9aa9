package record

// Cross-checks against franz-go: batches franz-go encodes must pass Validate and decode
// with Records, and batches Build writes (and the patches) must read back in franz-go's
// consumer code exactly as written.

import (
	"bytes"
	"fmt"
	"hash/crc32"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func kgoCodec(c Codec) kgo.CompressionCodec {
	switch c {
	case CodecGzip:
		return kgo.GzipCompression()
	case CodecSnappy:
		return kgo.SnappyCompression()
	case CodecLZ4:
		return kgo.Lz4Compression()
	case CodecZstd:
		return kgo.ZstdCompression()
	}
	return kgo.NoCompression()
}

// kmsgBatch encodes recs the way franz-go's producer does: kmsg records, compressed by
// franz-go's default compressor, in a kmsg.RecordBatch with a CRC-32C.
func kmsgBatch(t testing.TB, codec Codec, opts BuildOptions, recs []Record) []byte {
	t.Helper()
	var raw []byte
	maxTS := opts.BaseTimestamp + recs[0].TimestampDelta
	for i, r := range recs {
		kr := kmsg.Record{Attributes: r.Attributes, TimestampDelta64: r.TimestampDelta, OffsetDelta: int32(i), Key: r.Key, Value: r.Value}
		for _, h := range r.Headers {
			kr.Headers = append(kr.Headers, kmsg.Header{Key: h.Key, Value: h.Value})
		}
		enc := kr.AppendTo(nil)
		kr.Length = int32(len(enc) - 1) // the Length 0 took one byte
		raw = kr.AppendTo(raw)
		maxTS = max(maxTS, opts.BaseTimestamp+r.TimestampDelta)
	}
	attrs := opts.Attributes
	if codec != CodecNone {
		comp, err := kgo.DefaultCompressor(kgoCodec(codec))
		if err != nil {
			t.Fatal(err)
		}
		out, used := comp.Compress(new(bytes.Buffer), raw)
		if int(used) != int(codec) {
			t.Fatalf("franz-go compressed with %d, want %d", used, codec)
		}
		raw = append([]byte{}, out...)
		attrs |= int16(codec)
	}
	kb := kmsg.RecordBatch{
		FirstOffset: opts.BaseOffset, Length: int32(49 + len(raw)), PartitionLeaderEpoch: opts.PartitionLeaderEpoch, Magic: 2,
		Attributes: attrs, LastOffsetDelta: int32(len(recs) - 1), FirstTimestamp: opts.BaseTimestamp, MaxTimestamp: maxTS,
		ProducerID: opts.ProducerID, ProducerEpoch: opts.ProducerEpoch, FirstSequence: opts.BaseSequence,
		NumRecords: int32(len(recs)), Records: raw,
	}
	b := kb.AppendTo(nil)
	kb.CRC = int32(crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return kb.AppendTo(nil)
}

func TestFranzBatchesDecode(t *testing.T) {
	sets := map[string][]Record{
		"small":  sampleRecords(7, 40, 20),
		"large":  sampleRecords(60, 2000, 21),
		"single": {{Key: []byte("k"), Value: bytes.Repeat([]byte("v"), 5000), Headers: []RecordHeader{{Key: "x", Value: nil}}}},
	}
	opts := BuildOptions{BaseTimestamp: 1_700_000_000_123, ProducerID: 99, ProducerEpoch: 3, BaseSequence: 1000, PartitionLeaderEpoch: -1}
	for name, recs := range sets {
		for _, codec := range allCodecs {
			t.Run(name+"/"+codec.String(), func(t *testing.T) {
				b := kmsgBatch(t, codec, opts, recs)
				h, err := Validate(b)
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				if h.Codec() != codec || h.ProducerID != 99 || h.BaseSequence != 1000 || h.NumRecords != int32(len(recs)) {
					t.Fatalf("header %+v", h)
				}
				got, err := collect(b)
				if err != nil {
					t.Fatalf("Records: %v", err)
				}
				if err := sameRecords(got, numbered(recs)); err != nil {
					t.Fatal(err)
				}
				// Build writes the same bytes for uncompressed batches.
				if codec == CodecNone {
					if built := mustBuild(t, opts, recs); !bytes.Equal(built, b) {
						t.Fatalf("Build differs from franz-go's encoding")
					}
				}
			})
		}
	}
}

// TestBuildReadsInFranz reads Build's batches, plain and patched for the wire, with
// kmsg and with franz-go's consumer-side batch processing, which checks the CRC,
// decompresses (franz-go's own decoders) and parses.
func TestBuildReadsInFranz(t *testing.T) {
	recs := sampleRecords(25, 300, 22)
	base := time.UnixMilli(1_700_000_000_000)
	for _, codec := range allCodecs {
		for _, xerial := range []bool{false, true} {
			if xerial && codec != CodecSnappy {
				continue
			}
			for _, lat := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/xerial=%v/log-append-time=%v", codec, xerial, lat), func(t *testing.T) {
					opts := BuildOptions{Codec: codec, SnappyXerial: xerial, BaseTimestamp: base.UnixMilli(), ProducerID: 4, ProducerEpoch: 1, BaseSequence: 10, PartitionLeaderEpoch: -1}
					b := mustBuild(t, opts, recs)

					var kb kmsg.RecordBatch
					if err := kb.ReadFrom(b); err != nil {
						t.Fatalf("kmsg ReadFrom: %v", err)
					}
					if got := uint32(crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli))); uint32(kb.CRC) != got {
						t.Fatalf("CRC %#x, computed %#x", uint32(kb.CRC), got)
					}
					if kb.NumRecords != 25 || kb.LastOffsetDelta != 24 || kb.Attributes != int16(codec) || kb.FirstSequence != 10 || kb.Length != int32(len(b)-12) {
						t.Fatalf("kmsg batch %+v", kb)
					}
					raw, err := kgo.DefaultDecompressor().Decompress(kb.Records, kgo.CompressionCodecType(codec))
					if err != nil {
						t.Fatalf("franz-go decompress: %v", err)
					}
					for i := range recs {
						var kr kmsg.Record
						if err := kr.ReadFrom(raw); err != nil {
							t.Fatalf("kmsg record %d: %v", i, err)
						}
						n := len(kr.AppendTo(nil))
						raw = raw[n:]
						if kr.OffsetDelta != int32(i) || !bytes.Equal(kr.Value, recs[i].Value) {
							t.Fatalf("kmsg record %d: %+v", i, kr)
						}
					}
					if len(raw) != 0 {
						t.Fatalf("%d bytes after the records", len(raw))
					}

					// Patch for the wire and consume as franz-go's fetch path does.
					wire := append([]byte{}, b...)
					const baseOffset = 1000
					appendTime := base.Add(time.Hour)
					SetBaseOffset(wire, baseOffset)
					SetPartitionLeaderEpoch(wire, 5)
					if lat {
						SetLogAppendTime(wire, appendTime.UnixMilli())
					}
					fp, _ := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{Topic: "t", Partition: 0},
						&kmsg.FetchResponseTopicPartition{Partition: 0, HighWatermark: baseOffset + 25, RecordBatches: wire}, kgo.DefaultDecompressor(), nil)
					if fp.Err != nil {
						t.Fatalf("franz-go fetch: %v", fp.Err)
					}
					if len(fp.Records) != len(recs) {
						t.Fatalf("franz-go fetch: %d records, want %d", len(fp.Records), len(recs))
					}
					for i, r := range fp.Records {
						want := recs[i]
						wantTS := base.Add(time.Duration(want.TimestampDelta) * time.Millisecond)
						if lat {
							wantTS = appendTime
						}
						if r.Offset != baseOffset+int64(i) || r.LeaderEpoch != 5 || !r.Timestamp.Equal(wantTS) ||
							r.Attrs.TimestampType() != map[bool]int8{false: 0, true: 1}[lat] ||
							!bytes.Equal(r.Key, want.Key) || !bytes.Equal(r.Value, want.Value) || len(r.Headers) != len(want.Headers) ||
							r.ProducerID != 4 || r.ProducerEpoch != 1 {
							t.Fatalf("franz-go record %d: offset %d epoch %d ts %v type %d key %q value %.10q; want ts %v",
								i, r.Offset, r.LeaderEpoch, r.Timestamp, r.Attrs.TimestampType(), r.Key, r.Value, wantTS)
						}
					}

					// A flipped bit is caught by franz-go's CRC check too.
					wire[len(wire)-1] ^= 1
					fp, _ = kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{Topic: "t"},
						&kmsg.FetchResponseTopicPartition{RecordBatches: wire}, kgo.DefaultDecompressor(), nil)
					if fp.Err == nil {
						t.Fatal("franz-go accepted a corrupted batch")
					}
				})
			}
		}
	}
}
