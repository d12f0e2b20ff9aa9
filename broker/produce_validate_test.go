package broker

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/record"
)

// testRecords encodes records as franz-go does, with the given offset deltas; a nil
// key is null.
func testRecords(keys [][]byte, deltas ...int32) []byte {
	var raw []byte
	for i, d := range deltas {
		kr := kmsg.Record{OffsetDelta: d, Key: keys[i%len(keys)], Value: fmt.Appendf(nil, "value-%d", i)}
		kr.Length = int32(len(kr.AppendTo(nil)) - 1) // the Length 0 took one byte
		raw = kr.AppendTo(raw)
	}
	return raw
}

// testBatch is a batch of n records (LastOffsetDelta n-1) whose records field is raw,
// compressed with codec by franz-go's compressor: a sound header and CRC whatever raw
// holds, as a producer with a bug would send it.
func testBatch(t testing.TB, codec record.Codec, n int32, raw []byte) []byte {
	t.Helper()
	data := raw
	if codec != record.CodecNone {
		var kc kgo.CompressionCodec
		switch codec {
		case record.CodecGzip:
			kc = kgo.GzipCompression()
		case record.CodecSnappy:
			kc = kgo.SnappyCompression()
		case record.CodecLZ4:
			kc = kgo.Lz4Compression()
		case record.CodecZstd:
			kc = kgo.ZstdCompression()
		}
		comp, err := kgo.DefaultCompressor(kc)
		if err != nil {
			t.Fatal(err)
		}
		out, _ := comp.Compress(new(bytes.Buffer), raw)
		data = bytes.Clone(out)
	}
	return rawTestBatch(codec, n, data)
}

// rawTestBatch is a batch of n records whose records field is data, as is.
func rawTestBatch(codec record.Codec, n int32, data []byte) []byte {
	kb := kmsg.RecordBatch{Length: int32(49 + len(data)), PartitionLeaderEpoch: -1, Magic: 2, Attributes: int16(codec),
		LastOffsetDelta: n - 1, FirstTimestamp: 1_700_000_000_000, MaxTimestamp: 1_700_000_000_000,
		ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: n, Records: data}
	b := kb.AppendTo(nil)
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// TestValidatePartitionChecksRecords checks the codes a produced batch gets for each
// record-level fault, compressed and not, on every kind of topic: the checks are the
// same whether or not the topic is compacted or has a key index, and an indexed topic
// gets its keys from the same pass.
func TestValidatePartitionChecksRecords(t *testing.T) {
	b := newAdminBroker(t, newTestCoordinator(t))
	// validatePartition takes the topic as the broker's cache holds it; an
	// indexed topic without compaction cannot be created, but its checks
	// are still defined.
	topic := func(name string, configs map[string]string) coordapi.Topic {
		return coordapi.Topic{Name: name, Partitions: 1, Configs: configs}
	}
	topics := map[string]coordapi.Topic{
		"plain":           topic("plain", nil),
		"compacted":       topic("compacted", map[string]string{"cleanup.policy": "compact"}),
		"indexed":         topic("indexed", map[string]string{"cleanup.policy": "compact", coordapi.ConfigKVIndexEnabled: "true"}),
		"indexed-delete":  topic("indexed-delete", map[string]string{coordapi.ConfigKVIndexEnabled: "true"}),
		"small-max-bytes": topic("small-max-bytes", map[string]string{"max.message.bytes": "500"}),
	}
	keyed := [][]byte{[]byte("a"), []byte("b"), []byte("c")}
	mixed := [][]byte{[]byte("a"), nil}
	bomb, err := record.Build(record.BuildOptions{Codec: record.CodecZstd, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1},
		[]record.Record{{Key: []byte("k"), Value: make([]byte, record.DefaultMaxDecompressed)}})
	if err != nil {
		t.Fatal(err)
	}
	codecs := []record.Codec{record.CodecNone, record.CodecGzip, record.CodecSnappy, record.CodecLZ4, record.CodecZstd}
	type tcase struct {
		name    string
		records []byte
		want    map[string]int16 // by topic; a topic left out wants 0
		all     int16            // the code for every topic (when want is nil)
	}
	var cases []tcase
	invalid := kerr.InvalidRecord.Code
	for _, c := range codecs {
		three := testRecords(keyed, 0, 1, 2)
		cases = append(cases,
			tcase{name: c.String() + "/ok", records: testBatch(t, c, 3, three)},
			tcase{name: c.String() + "/fewer-records-than-header", records: testBatch(t, c, 4, three), all: invalid},
			tcase{name: c.String() + "/more-records-than-header", records: testBatch(t, c, 2, three), all: invalid},
			tcase{name: c.String() + "/offset-deltas-not-consecutive", records: testBatch(t, c, 3, testRecords(keyed, 0, 2, 1)), all: invalid},
			tcase{name: c.String() + "/last-record-truncated", records: testBatch(t, c, 3, three[:len(three)-2]), all: invalid},
			tcase{name: c.String() + "/trailing-bytes", records: testBatch(t, c, 3, append(slices.Clone(three), 0, 0)), all: invalid},
			tcase{name: c.String() + "/keyless-record", records: testBatch(t, c, 3, testRecords(mixed, 0, 1, 2)),
				want: map[string]int16{"compacted": invalid, "indexed": invalid}},
		)
		if c != record.CodecNone {
			cases = append(cases, tcase{name: c.String() + "/garbage-payload", records: rawTestBatch(c, 3, []byte("this is no compressed data, just bytes")), all: invalid})
		}
	}
	badCRC := testBatch(t, record.CodecZstd, 3, testRecords(keyed, 0, 1, 2))
	badCRC[len(badCRC)-1] ^= 1
	cases = append(cases,
		tcase{name: "zstd/bad-crc", records: badCRC, all: kerr.CorruptMessage.Code},
		tcase{name: "zstd/decompression-bomb", records: bomb, all: kerr.MessageTooLarge.Code},
	)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for name, topic := range topics {
				want := tc.all
				if tc.want != nil {
					want = tc.want[name]
				}
				if name == "small-max-bytes" {
					if want == 0 && len(tc.records) > 500 {
						want = kerr.MessageTooLarge.Code
					}
				}
				batches, err := b.validatePartition(topic, 0, tc.records)
				if got := coordapi.ErrorCode(err); got != want {
					t.Fatalf("topic %s: code %d (%v), want %d: %v", name, got, kerr.ErrorForCode(got), want, err)
				}
				if err != nil {
					continue
				}
				if len(batches) != 1 || !bytes.Equal(batches[0].Data, tc.records) {
					t.Fatalf("topic %s: batches %v", name, batches)
				}
				var wantKeys []coordapi.KeyEntry
				if name == "indexed" || name == "indexed-delete" {
					_ = record.Records(tc.records, func(r *record.Record) error {
						if r.Key != nil {
							wantKeys = append(wantKeys, coordapi.KeyEntry{Key: bytes.Clone(r.Key), OffsetDelta: r.OffsetDelta})
						}
						return nil
					})
				}
				if got := batches[0].Commit.Keys; !slices.EqualFunc(got, wantKeys, func(a, b coordapi.KeyEntry) bool {
					return bytes.Equal(a.Key, b.Key) && a.OffsetDelta == b.OffsetDelta && a.Tombstone == b.Tombstone
				}) {
					t.Fatalf("topic %s: keys %v, want %v", name, got, wantKeys)
				}
			}
		})
	}
}
