package layout

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/floe-io/floe/coordapi"
)

// The decoders read bytes from disk: each Fuzz test checks that no input
// panics, and that what decodes encodes to a value that decodes the same.

func FuzzDecodeTopic(f *testing.F) {
	f.Add(EncodeTopic(&Topic{Name: "orders", Partitions: 3, CreatedMs: 1_700_000_000_000,
		Configs: map[string]string{"retention.ms": "1000", "cleanup.policy": "compact"}}))
	f.Add([]byte{ValueV1})
	f.Fuzz(func(t *testing.T, v []byte) {
		got, err := DecodeTopic(v)
		if err != nil {
			return
		}
		again, err := DecodeTopic(EncodeTopic(&got))
		if err != nil || !reflect.DeepEqual(again, got) {
			t.Fatalf("re-encoded topic decodes to %+v, %v; was %+v", again, err, got)
		}
	})
}

func FuzzDecodePartition(f *testing.F) {
	f.Add(EncodePartition(&Partition{LogStart: 3, HWM: 40, MaxTimestamp: 7, MaxTimestampOffset: 39, MaxTimestampLast: 39,
		WALStart: 20, Bytes: 900, SegBytes: 500, Segments: 2, MetaBytes: 77, CleanOffset: 15, HorizonMs: -1, CleanedMs: 999}))
	f.Add([]byte{ValueV1, 2, 4, 6, 8, 10})
	f.Add([]byte{2, 2, 4, 6, 8, 10, 1, 2, 3, 4, 5})
	f.Fuzz(func(t *testing.T, v []byte) {
		got, _, err := DecodePartition(v)
		if err != nil {
			return
		}
		again, v1, err := DecodePartition(EncodePartition(&got))
		if err != nil || v1 || again != got {
			t.Fatalf("re-encoded checkpoint decodes to %+v (v1 %t), %v; was %+v", again, v1, err, got)
		}
	})
}

func FuzzDecodeObject(f *testing.F) {
	f.Add(EncodeObject(&Object{State: 1, Size: 1 << 20, Live: 1000, CreatedMs: 5, GarbageSinceMs: 0, BrokerID: 3, Key: "wal/0/abc"}))
	f.Fuzz(func(t *testing.T, v []byte) {
		got, err := DecodeObject(v)
		if err != nil {
			return
		}
		again, err := DecodeObject(EncodeObject(&got))
		if err != nil || again != got {
			t.Fatalf("re-encoded object decodes to %+v, %v; was %+v", again, err, got)
		}
	})
}

func FuzzDecodeProducer(f *testing.F) {
	f.Add(EncodeProducer(&Producer{Epoch: 2, LastUpdateMs: 9, N: 2,
		Batches: [MaxProducerBatches]SeqBatch{{0, 4, 10, 99}, {5, 5, 20, -1}}}))
	f.Add(EncodeProducerID(ProducerID{Epoch: 4, LastEpoch: 3}))
	f.Fuzz(func(t *testing.T, v []byte) {
		if got, err := DecodeProducer(v); err == nil {
			again, err := DecodeProducer(EncodeProducer(&got))
			if err != nil || again != got {
				t.Fatalf("re-encoded producer decodes to %+v, %v; was %+v", again, err, got)
			}
		}
		if got, err := DecodeProducerID(v); err == nil {
			again, err := DecodeProducerID(EncodeProducerID(got))
			if err != nil || again != got {
				t.Fatalf("re-encoded producer id decodes to %+v, %v; was %+v", again, err, got)
			}
		}
	})
}

// FuzzDecodeSmallValues covers the meta counters and the view,
// transaction and table planning values.
func FuzzDecodeSmallValues(f *testing.F) {
	f.Add(EncodeUint64(42))
	f.Add(EncodeOffset(-7))
	f.Add(EncodeView(coordapi.TopicID{1, 2}, []byte("key")))
	f.Add(EncodeTableCovered(map[int32]int64{0: 10, 3: 7}))
	f.Add(EncodeTxnKeys([]coordapi.KeyEntry{{Key: []byte("a"), OffsetDelta: 1, Tombstone: true}, {Key: []byte("b")}}))
	f.Add([]byte{ValueV1, 1, 7, 0, 10, 1, 4})
	f.Fuzz(func(t *testing.T, v []byte) {
		if n, err := DecodeUint64("counter", v); err == nil && !bytes.Equal(EncodeUint64(n), v) {
			t.Fatalf("counter %d re-encodes to %x, was %x", n, EncodeUint64(n), v)
		}
		if o, err := DecodeOffset("offset", v); err == nil {
			if again, err := DecodeOffset("offset", EncodeOffset(o)); err != nil || again != o {
				t.Fatalf("offset %d re-encoded decodes to %d, %v", o, again, err)
			}
		}
		if base, key, err := DecodeView(v); err == nil {
			if b2, k2, err := DecodeView(EncodeView(base, key)); err != nil || b2 != base || !bytes.Equal(k2, key) {
				t.Fatalf("view %s %q re-encoded decodes to %s %q, %v", base, key, b2, k2, err)
			}
		}
		covered := map[int32]int64{}
		if err := DecodeTableCovered(v, covered); err == nil {
			again := map[int32]int64{}
			if err := DecodeTableCovered(EncodeTableCovered(covered), again); err != nil || !reflect.DeepEqual(again, covered) {
				t.Fatalf("covered %v re-encoded decodes to %v, %v", covered, again, err)
			}
		}
		if keys, err := DecodeTxnKeys(v); err == nil {
			if again, err := DecodeTxnKeys(EncodeTxnKeys(keys)); err != nil || !reflect.DeepEqual(again, keys) {
				t.Fatalf("keys %+v re-encoded decode to %+v, %v", keys, again, err)
			}
		}
		_, _ = DecodeBatchV1(v)
	})
}

func FuzzDecodeSegmentRow(f *testing.F) {
	f.Add(int64(49), AppendSegmentRow(nil, &SegmentRow{Object: 9, LogAppendTime: true, Base: 40, Batches: 3,
		DataLength: 1000, MaxTimestamp: 5, TSOffset: 45, TSLast: 47}))
	f.Fuzz(func(t *testing.T, last int64, v []byte) {
		got, err := DecodeSegmentRow(last, v)
		if err != nil {
			return
		}
		again, err := DecodeSegmentRow(last, AppendSegmentRow(nil, &got))
		if err != nil || again != got {
			t.Fatalf("re-encoded segment row decodes to %+v, %v; was %+v", again, err, got)
		}
		r, err := NewRunReader(last, v)
		if err != nil || !r.Segment() || r.Object() != got.Object {
			t.Fatalf("run reader of a segment row: %+v, %v", r, err)
		}
	})
}

// FuzzDecodeKeys decodes arbitrary keys of the families whose keys are
// split: what decodes builds the same key again.
func FuzzDecodeKeys(f *testing.F) {
	f.Add(BatchKey(coordapi.TopicID{1}, 2, 3))
	f.Add(ObjectKey(77))
	f.Add(ProducerKey(5, coordapi.TopicID{9}, 1))
	f.Add(TxnFamilyKey(PrefixAborted, coordapi.TopicID{4}, 2, 10, 11))
	f.Fuzz(func(t *testing.T, k []byte) {
		if last, err := DecodeBatchKey(k); err == nil {
			var id coordapi.TopicID
			copy(id[:], k[1:17])
			if again := BatchKey(id, int32(uint32(k[17])<<24|uint32(k[18])<<16|uint32(k[19])<<8|uint32(k[20])), last); !bytes.Equal(again, k) {
				t.Fatalf("batch key %x rebuilt as %x", k, again)
			}
		}
		if num, err := DecodeObjectKey(k); err == nil && !bytes.Equal(ObjectKey(num), k) {
			t.Fatalf("object key %x rebuilt as %x", k, ObjectKey(num))
		}
		if pid, id, p, err := DecodeProducerKey(k); err == nil && !bytes.Equal(ProducerKey(pid, id, p), k) {
			t.Fatalf("producer key %x rebuilt as %x", k, ProducerKey(pid, id, p))
		}
		for _, size := range []int{29, 37} {
			if id, p, n, rest, err := DecodeTxnPartKey("txn", k, size); err == nil {
				again := append(TxnFamilyKey(k[0], id, p, n), rest...)
				if !bytes.Equal(again, k) {
					t.Fatalf("transaction key %x rebuilt as %x", k, again)
				}
			}
		}
	})
}
