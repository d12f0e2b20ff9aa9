package rpc

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/coordapi"
)

var (
	idA = coordapi.TopicID{0: 0xaa, 15: 1}
	idB = coordapi.TopicID{0: 0xbb, 15: 2}
)

func strp(s string) *string { return &s }

// roundTrip encodes v, decodes it back and compares; then checks that
// every strict prefix of the encoding fails to decode (and does not panic).
func roundTrip[T any](t *testing.T, v T, enc func(*encoder, T), dec func(*decoder) T) {
	t.Helper()
	roundTripTail(t, v, enc, dec, 0)
}

// roundTripTail is roundTrip for a message whose last tail bytes are a
// field later builds appended: a prefix without them decodes (as a
// message of an earlier build), any shorter one does not.
func roundTripTail[T any](t *testing.T, v T, enc func(*encoder, T), dec func(*decoder) T, tail int) {
	t.Helper()
	var e encoder
	enc(&e, v)
	d := decoder{b: e.b}
	got := dec(&d)
	if d.err != nil {
		t.Fatalf("decode: %v", d.err)
	}
	if d.left() != 0 {
		t.Fatalf("%d bytes left after decoding", d.left())
	}
	if !reflect.DeepEqual(got, v) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, v)
	}
	for i := range len(e.b) - tail {
		d := decoder{b: e.b[:i]}
		dec(&d)
		if d.err == nil && len(e.b) > 0 {
			t.Fatalf("prefix of %d of %d bytes decoded without error", i, len(e.b))
		}
	}
}

func TestRoundTrip(t *testing.T) {
	commit := &coordapi.CommitRequest{
		ObjectKey: "prefix/wal/0192f6a0-0000-7000-8000-000000000001", ObjectSize: 1 << 23, BrokerID: 3,
		Batches: []coordapi.CommitBatch{
			{TopicID: idA, Partition: 0, ByteOffset: 0, ByteLength: 100, LastOffsetDelta: 9, MaxTimestamp: 1_700_000_000_000,
				ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1},
			{TopicID: idB, Partition: 599, ByteOffset: 100, ByteLength: 5000, LastOffsetDelta: 0, MaxTimestamp: 1_700_000_000_005,
				ProducerID: 1234567, ProducerEpoch: 3, BaseSequence: math.MaxInt32,
				Keys: []coordapi.KeyEntry{{Key: []byte("k1"), OffsetDelta: 0}, {Key: []byte{}, OffsetDelta: 1, Tombstone: true}}},
			// A gap and a smaller timestamp: both deltas negative or large.
			{TopicID: idA, Partition: math.MaxInt32, ByteOffset: 9000, ByteLength: math.MaxInt32, LastOffsetDelta: math.MaxInt32,
				MaxTimestamp: math.MinInt64, ProducerID: math.MaxInt64, ProducerEpoch: math.MaxInt16, BaseSequence: 0},
			{TopicID: idA, Partition: -1, ByteOffset: -5, ByteLength: -1, LastOffsetDelta: -1, MaxTimestamp: math.MaxInt64,
				ProducerID: math.MinInt64, ProducerEpoch: math.MinInt16, BaseSequence: math.MinInt32},
			// A transactional batch and the markers shard 0 sends a shard.
			{TopicID: idB, Partition: 1, ByteLength: 10, ProducerID: 9, ProducerEpoch: 1, Transactional: true, TransactionalID: "etl"},
			{TopicID: idB, Partition: 1, ByteLength: 10, ProducerID: 9, ProducerEpoch: 1, BaseSequence: -1,
				Transactional: true, Control: true, Commit: true},
			{TopicID: idB, Partition: 2, ByteLength: 10, ProducerID: 9, ProducerEpoch: 1, BaseSequence: -1,
				Transactional: true, Control: true},
		},
	}
	cases := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"empty", func(t *testing.T) { roundTrip(t, empty{}, encEmpty, decEmpty) }},
		{"string", func(t *testing.T) { roundTrip(t, "topic-ä.1", encString, decString) }},
		{"int64", func(t *testing.T) { roundTrip(t, int64(math.MinInt64), encInt64, decInt64) }},
		{"id", func(t *testing.T) { roundTrip(t, idA, encID, decID) }},
		{"topic", func(t *testing.T) {
			roundTrip(t, coordapi.Topic{ID: idA, Name: "orders", Partitions: 600,
				Configs: map[string]string{"cleanup.policy": "compact", "retention.ms": "-1", "": ""}}, encTopic, decTopic)
		}},
		{"topic no configs", func(t *testing.T) {
			roundTrip(t, coordapi.Topic{ID: idB, Name: "t", Partitions: 1}, encTopic, decTopic)
		}},
		{"create topic", func(t *testing.T) {
			roundTrip(t, coordapi.CreateTopicRequest{Name: "x", Partitions: -1, ReplicationFactor: -1,
				Configs: map[string]string{"a": "b"}, ValidateOnly: true}, encCreateTopicReq, decCreateTopicReq)
		}},
		{"create partitions", func(t *testing.T) {
			roundTrip(t, createPartitionsReq{Name: "x", Count: 12, ValidateOnly: true}, encCreatePartitionsReq, decCreatePartitionsReq)
		}},
		{"alter configs", func(t *testing.T) {
			roundTrip(t, alterConfigsReq{Name: "x", Ops: []coordapi.ConfigOp{
				{Name: "retention.ms", Op: coordapi.OpSet, Value: strp("1000")},
				{Name: "cleanup.policy", Op: coordapi.OpDelete},
				{Name: "x", Op: coordapi.OpSubtract, Value: strp("")},
			}, Incremental: true}, encAlterConfigsReq, decAlterConfigsReq)
		}},
		{"alter configs none", func(t *testing.T) {
			roundTrip(t, alterConfigsReq{Name: "x", ValidateOnly: true}, encAlterConfigsReq, decAlterConfigsReq)
		}},
		{"topics request", func(t *testing.T) { roundTrip(t, topicsReq{After: "m"}, encTopicsReq, decTopicsReq) }},
		{"topics response", func(t *testing.T) {
			roundTrip(t, topicsResp{Topics: []coordapi.Topic{{ID: idA, Name: "a", Partitions: 1},
				{ID: idB, Name: "b", Partitions: 2, Configs: map[string]string{"k": "v"}}}, More: true}, encTopicsResp, decTopicsResp)
		}},
		{"topics response empty", func(t *testing.T) { roundTrip(t, topicsResp{}, encTopicsResp, decTopicsResp) }},
		{"topic partition", func(t *testing.T) {
			roundTrip(t, topicPartitionReq{ID: idA, Partition: 7}, encTopicPartitionReq, decTopicPartitionReq)
		}},
		{"partition state", func(t *testing.T) {
			roundTrip(t, coordapi.PartitionState{LogStartOffset: 5, HighWatermark: 1 << 40}, encPartitionState, decPartitionState)
		}},
		{"find batches request", func(t *testing.T) {
			roundTrip(t, coordapi.FindBatchesRequest{TopicID: idA, Partition: 3, Offset: 1 << 33, MaxBytes: 1 << 20},
				encFindBatchesReq, decFindBatchesReq)
		}},
		{"find batches response", func(t *testing.T) {
			roundTrip(t, coordapi.FindBatchesResponse{
				PartitionState: coordapi.PartitionState{LogStartOffset: 0, HighWatermark: 30},
				Batches: []coordapi.BatchCoord{
					{ObjectKey: "wal/1", ObjectSize: 1000, ByteOffset: 0, ByteLength: 100, BaseOffset: 0, LastOffset: 9, MaxTimestamp: 5},
					{ObjectKey: "wal/1", ObjectSize: 1000, ByteOffset: 100, ByteLength: 100, BaseOffset: 10, LastOffset: 19, MaxTimestamp: 6, LogAppendTime: true},
					{ObjectKey: "wal/2", ObjectSize: 50, ByteOffset: 0, ByteLength: 50, BaseOffset: 20, LastOffset: 29, MaxTimestamp: -1},
					{ObjectKey: "wal/1", ObjectSize: 1000, ByteOffset: 200, ByteLength: 100, BaseOffset: 30, LastOffset: 30, MaxTimestamp: 7},
				},
			}, encFindBatchesResp, decFindBatchesResp)
		}},
		{"find batches response with a segment", func(t *testing.T) {
			roundTrip(t, coordapi.FindBatchesResponse{
				PartitionState: coordapi.PartitionState{LogStartOffset: 3, HighWatermark: 30},
				Batches: []coordapi.BatchCoord{{ObjectKey: "tiered/x/0/00000000000000000000-a.seg", ObjectSize: 5000, ByteLength: 4000,
					BaseOffset: 0, LastOffset: 19, MaxTimestamp: 9, LogAppendTime: true, Segment: true}},
			}, encFindBatchesResp, decFindBatchesResp)
		}},
		{"claim tier job request", func(t *testing.T) {
			roundTripTail(t, coordapi.ClaimTierJobRequest{BrokerID: 3}, encClaimTierJobReq, decClaimTierJobReq, 3)
			roundTripTail(t, coordapi.ClaimTierJobRequest{BrokerID: 3, Tables: true}, encClaimTierJobReq, decClaimTierJobReq, 3)
			roundTripTail(t, coordapi.ClaimTierJobRequest{BrokerID: 3, Tables: true, TableMaintain: true}, encClaimTierJobReq, decClaimTierJobReq, 3)
			roundTripTail(t, coordapi.ClaimTierJobRequest{BrokerID: 3, Tables: true, TableMaintain: true, TableWAL: true}, encClaimTierJobReq, decClaimTierJobReq, 3)
		}},
		{"claim tier job response", func(t *testing.T) {
			roundTrip(t, claimTierJobResp{OK: true, Job: coordapi.TierJob{
				ID: math.MaxUint64, TopicID: idA, Partition: 2, BaseOffset: 10, LastOffset: 29, LeaseMs: 120000, LogAppendTime: true,
				Batches: []coordapi.BatchCoord{
					{ObjectKey: "wal/1", ObjectSize: 1000, ByteOffset: 100, ByteLength: 100, BaseOffset: 10, LastOffset: 19, MaxTimestamp: 6, LogAppendTime: true},
					{ObjectKey: "wal/2", ObjectSize: 50, ByteOffset: 0, ByteLength: 50, BaseOffset: 20, LastOffset: 29, MaxTimestamp: 7, LogAppendTime: true},
				},
			}}, encClaimTierJobResp, decClaimTierJobResp)
			roundTrip(t, claimTierJobResp{}, encClaimTierJobResp, decClaimTierJobResp)
			roundTrip(t, claimTierJobResp{OK: true, Job: coordapi.TierJob{
				ID: 9, TopicID: idB, Partition: 1, BaseOffset: 0, LastOffset: 99, LeaseMs: 60000, Kind: coordapi.TierJobCompact,
				Compact: &coordapi.CompactJob{
					Segments: []coordapi.BatchCoord{
						{ObjectKey: "tiered/a.seg", ObjectSize: 900, ByteLength: 800, BaseOffset: 0, LastOffset: 49, MaxTimestamp: 5, Segment: true},
						{ObjectKey: "tiered/b.seg", ObjectSize: 700, ByteLength: 600, BaseOffset: 50, LastOffset: 99, MaxTimestamp: -1, Segment: true},
					},
					DirtyOffset: 50, KeyIndex: true, NowMs: 1 << 41, DeleteRetentionMs: 86400000, SegmentBytes: 1 << 27,
					ProducerLastOffsets: []int64{3, 49, 98},
				},
			}}, encClaimTierJobResp, decClaimTierJobResp)
			roundTripTail(t, claimTierJobResp{OK: true, Job: coordapi.TierJob{
				ID: 10, TopicID: idA, Partition: -1, LeaseMs: 60000, Kind: coordapi.TierJobTable,
				Table: &coordapi.TableJob{TopicName: "users", Partitioning: "none", Compacted: true,
					Ranges: []coordapi.TableRange{{Partition: 0, From: 5, To: 8}}},
			}}, encClaimTierJobResp, decClaimTierJobResp, 1) // compacted: appended
			roundTrip(t, claimTierJobResp{OK: true, Job: coordapi.TierJob{
				ID: 11, TopicID: idA, Partition: -2, LeaseMs: 60000, Kind: coordapi.TierJobTableMaintain,
				Maintain: &coordapi.TableMaintainJob{TopicName: "orders", NowMs: 1 << 41, RetentionMs: 7 * 86400000, OrphanGraceMs: 3600000},
			}}, encClaimTierJobResp, decClaimTierJobResp)
		}},
		{"transactions", func(t *testing.T) {
			p := coordapi.TxnProducer{TransactionalID: "etl", ProducerID: 7, ProducerEpoch: 3}
			tps := []coordapi.TopicPartition{{TopicID: idA, Partition: 0}, {TopicID: idB, Partition: 9}}
			roundTrip(t, coordapi.AddPartitionsRequest{TxnProducer: p, VerifyOnly: true, Partitions: tps}, encAddPartitionsReq, decAddPartitionsReq)
			roundTrip(t, []int16{0, 3, 48}, encCodes, decCodes)
			roundTrip(t, addOffsetsReq{P: p, Group: "g"}, encAddOffsetsReq, decAddOffsetsReq)
			roundTrip(t, coordapi.EndTxnRequest{TxnProducer: p, Commit: true}, encEndTxnReq, decEndTxnReq)
			roundTrip(t, []coordapi.TxnDescription{{TransactionalID: "etl", State: coordapi.TxnOngoing, ProducerID: 7, ProducerEpoch: 3,
				TimeoutMs: 60000, StartMs: 1 << 40, Partitions: tps}, {TransactionalID: "x", ErrorCode: 105, ProducerID: -1, ProducerEpoch: -1, StartMs: -1}},
				encTxnDescriptions, decTxnDescriptions)
			roundTrip(t, listTxnsReq{States: []coordapi.TxnState{coordapi.TxnOngoing}, ProducerIDs: []int64{1, 2}}, encListTxnsReq, decListTxnsReq)
			roundTrip(t, []coordapi.TxnListing{{TransactionalID: "a", ProducerID: 1, State: coordapi.TxnCompleteAbort}}, encTxnListings, decTxnListings)
			roundTrip(t, []coordapi.ProducerDescription{{ProducerID: 1, ProducerEpoch: 2, LastSequence: 99, LastTimestamp: 5, CoordinatorEpoch: -1, CurrentTxnStartOffset: 40}},
				encProducerDescriptions, decProducerDescriptions)
			roundTrip(t, coordapi.FindBatchesResponse{PartitionState: coordapi.PartitionState{LogStartOffset: 1, HighWatermark: 90, LastStableOffset: 40},
				Aborted: []coordapi.AbortedTxn{{ProducerID: 7, FirstOffset: 10, LastOffset: 20}}}, encFindBatchesResp, decFindBatchesResp)
		}},
		{"scram users", func(t *testing.T) {
			roundTrip(t, userScramReq{User: "alice", Mechanism: coordapi.ScramSHA512}, encUserScramReq, decUserScramReq)
			roundTrip(t, userScramResp{}, encUserScramResp, decUserScramResp)
			roundTrip(t, userScramResp{OK: true, Cred: coordapi.ScramCredential{Mechanism: coordapi.ScramSHA256, Iterations: 4096,
				Salt: []byte("salt"), StoredKey: []byte("stored"), ServerKey: []byte("server")}}, encUserScramResp, decUserScramResp)
			roundTrip(t, []string{"alice", "", "bob"}, encStrings, decStrings)
			roundTrip(t, []coordapi.ScramUserInfo{{User: "alice", Credentials: []coordapi.ScramCredentialInfo{{Mechanism: 1, Iterations: 4096}, {Mechanism: 2, Iterations: 8192}}},
				{User: "x", ErrorCode: 91, ErrorMessage: "not found"}}, encScramUserInfos, decScramUserInfos)
			roundTrip(t, alterUserScramReq{Dels: []coordapi.ScramDeletion{{User: "a", Mechanism: 1}},
				Ups: []coordapi.ScramUpsertion{{User: "b", Mechanism: 2, Iterations: 4096, Salt: []byte{1, 2}, SaltedPassword: []byte{3}}}}, encAlterUserScramReq, decAlterUserScramReq)
			roundTrip(t, []coordapi.ScramUserResult{{User: "a"}, {User: "b", ErrorCode: 90, ErrorMessage: "dup"}}, encScramUserResults, decScramUserResults)
		}},
		{"kv latest offsets", func(t *testing.T) {
			roundTrip(t, coordapi.KvOffsetsRequest{TopicID: idA, Partition: 3, Keys: [][]byte{[]byte("a"), {}, []byte("ccc")}}, encKvOffsetsReq, decKvOffsetsReq)
			roundTrip(t, []int64{-1, 0, 1 << 50}, encOffsets, decOffsets)
		}},
		{"complete tier job request", func(t *testing.T) {
			// The last byte says there is no table result (absent from
			// brokers of earlier builds).
			roundTripTail(t, coordapi.CompleteTierJobRequest{JobID: 1 << 63, TopicID: idB, Partition: 1, BaseOffset: 5, LastOffset: 1 << 40,
				ObjectKey: "tiered/y.seg", ObjectSize: 1 << 27, DataLength: 1<<27 - 500}, encCompleteTierJobReq, decCompleteTierJobReq, 1)
			table := coordapi.CompleteTierJobRequest{JobID: 9, TopicID: idA, Partition: -1,
				Table: &coordapi.TableResult{SnapshotID: 1 << 62, Rows: 5, Covered: []coordapi.TableCovered{{Partition: 0, Next: 1 << 40}, {Partition: 7}}}}
			var with, without encoder
			encCompleteTierJobReq(&with, table)
			encCompleteTierJobReq(&without, coordapi.CompleteTierJobRequest{JobID: 9, TopicID: idA, Partition: -1})
			roundTripTail(t, table, encCompleteTierJobReq, decCompleteTierJobReq, len(with.b)-len(without.b)+1)
			roundTripTail(t, coordapi.CompleteTierJobRequest{JobID: 4, TopicID: idA, Partition: 0, BaseOffset: 0, LastOffset: 99,
				Compacted: &coordapi.CompactResult{CleanedThrough: 80, TombstoneHorizonMs: -1, BytesIn: 1400, BytesOut: 300, RecordsIn: 100, RecordsOut: 7,
					Segments: []coordapi.CompactedSegment{{ObjectKey: "tiered/c.seg", ObjectSize: 400, DataLength: 300, BaseOffset: 0, LastOffset: 99,
						Batches: 4, MaxTimestamp: 77, MaxTimestampOffset: 98, MaxTimestampLast: 98}}},
			}, encCompleteTierJobReq, decCompleteTierJobReq, 1)
		}},
		{"abandon tier job request", func(t *testing.T) {
			roundTrip(t, abandonTierJobReq{JobID: 42, Reason: "read failed"}, encAbandonTierJobReq, decAbandonTierJobReq)
		}},
		{"find key batches", func(t *testing.T) {
			roundTrip(t, coordapi.FindKeyBatchesRequest{TopicID: idA, Partition: 2, Key: []byte("CC54 RYD"), Offset: 1 << 40, MaxBytes: 1 << 20},
				encFindKeyBatchesReq, decFindKeyBatchesReq)
			roundTrip(t, coordapi.FindKeyBatchesRequest{TopicID: idB, Key: []byte{}}, encFindKeyBatchesReq, decFindKeyBatchesReq)
			roundTrip(t, coordapi.FindKeyBatchesResponse{Through: 7, PartitionState: coordapi.PartitionState{LogStartOffset: 1, HighWatermark: 7}},
				encFindKeyBatchesResp, decFindKeyBatchesResp)
			seg := coordapi.BatchCoord{ObjectKey: "tiered/a.seg", ObjectSize: 9000, ByteLength: 8000, BaseOffset: 0, LastOffset: 99, MaxTimestamp: 5, Segment: true}
			roundTrip(t, coordapi.FindKeyBatchesResponse{Ready: true, Through: 1 << 33,
				PartitionState: coordapi.PartitionState{LogStartOffset: 0, HighWatermark: 1 << 34},
				Batches: []coordapi.KeyBatch{
					{Coord: seg, BaseOffset: 10, LastOffset: 19},
					{Coord: seg, BaseOffset: 40, LastOffset: 40},
					{Coord: coordapi.BatchCoord{ObjectKey: "wal/x", ObjectSize: 1 << 23, ByteOffset: 500, ByteLength: 300, BaseOffset: 100, LastOffset: 109, MaxTimestamp: 77, LogAppendTime: true},
						BaseOffset: 100, LastOffset: 109},
				}}, encFindKeyBatchesResp, decFindKeyBatchesResp)
		}},
		{"find batches response empty", func(t *testing.T) {
			roundTrip(t, coordapi.FindBatchesResponse{PartitionState: coordapi.PartitionState{HighWatermark: 3}},
				encFindBatchesResp, decFindBatchesResp)
		}},
		{"find batches multi request", func(t *testing.T) {
			roundTrip(t, []coordapi.FindBatchesRequest{
				{TopicID: idA, Partition: 3, Offset: 1 << 33, MaxBytes: 1 << 20},
				{TopicID: idB, Partition: 0, Offset: 0, MaxBytes: 0},
				{TopicID: idA, Partition: math.MaxInt32, Offset: -1, MaxBytes: math.MinInt32},
			}, encFindBatchesMultiReq, decFindBatchesMultiReq)
			roundTrip(t, []coordapi.FindBatchesRequest(nil), encFindBatchesMultiReq, decFindBatchesMultiReq)
		}},
		{"find batches multi response", func(t *testing.T) {
			roundTrip(t, multiResults, encFindBatchesMultiResp, decFindBatchesMultiResp)
			roundTrip(t, []coordapi.FindBatchesResult(nil), encFindBatchesMultiResp, decFindBatchesMultiResp)
		}},
		{"list offset", func(t *testing.T) {
			roundTrip(t, listOffsetReq{ID: idA, Partition: 1, Timestamp: coordapi.TimestampMax}, encListOffsetReq, decListOffsetReq)
			roundTrip(t, listOffsetResp{Offset: 42, Timestamp: -1}, encListOffsetResp, decListOffsetResp)
		}},
		{"delete records", func(t *testing.T) {
			roundTrip(t, deleteRecordsReq{ID: idB, Partition: 0, Offset: -1}, encDeleteRecordsReq, decDeleteRecordsReq)
		}},
		{"init producer id", func(t *testing.T) {
			roundTrip(t, coordapi.InitProducerIDRequest{TransactionalID: strp("tx"), TimeoutMs: 60000, ProducerID: 9, ProducerEpoch: 2},
				encInitProducerIDReq, decInitProducerIDReq)
			roundTrip(t, coordapi.InitProducerIDRequest{ProducerID: -1, ProducerEpoch: -1}, encInitProducerIDReq, decInitProducerIDReq)
			roundTrip(t, coordapi.InitProducerIDResponse{ProducerID: 1000, ProducerEpoch: 0}, encInitProducerIDResp, decInitProducerIDResp)
		}},
		{"commit request", func(t *testing.T) { roundTrip(t, commit, encCommitReq, decCommitReq) }},
		{"commit request empty", func(t *testing.T) {
			roundTrip(t, &coordapi.CommitRequest{ObjectKey: "k"}, encCommitReq, decCommitReq)
		}},
		{"commit response", func(t *testing.T) {
			roundTrip(t, &coordapi.CommitResponse{Results: []coordapi.BatchResult{
				{BaseOffset: 0, LogAppendTime: -1, LogStartOffset: 0},
				{ErrorCode: kerr.OutOfOrderSequenceNumber.Code, BaseOffset: -1, LogAppendTime: -1, LogStartOffset: -1},
				{BaseOffset: 1 << 50, LogAppendTime: 1_700_000_000_000, LogStartOffset: 17},
			}}, encCommitResp, decCommitResp)
		}},
		{"kv lookup", func(t *testing.T) {
			roundTrip(t, kvLookupReq{ID: idA, Partition: 2, Key: []byte("key")}, encKvLookupReq, decKvLookupReq)
			roundTrip(t, kvLookupResp{Offset: 7, HighWatermark: 9, Found: true}, encKvLookupResp, decKvLookupResp)
			roundTrip(t, true, encBool, decBool)
		}},
		{"kv get", func(t *testing.T) {
			roundTrip(t, coordapi.KvGetRequest{TopicID: idA, Partition: math.MaxInt32, Key: []byte("key/ä")}, encKvGetReq, decKvGetReq)
			roundTrip(t, coordapi.KvGetResult{}, encKvGetResp, decKvGetResp)
			roundTrip(t, coordapi.KvGetResult{Indexed: true}, encKvGetResp, decKvGetResp)
			roundTrip(t, coordapi.KvGetResult{Indexed: true, Ready: true, Found: true, Offset: 3,
				PartitionState: coordapi.PartitionState{LogStartOffset: 5, HighWatermark: 9}}, encKvGetResp, decKvGetResp)
			roundTrip(t, coordapi.KvGetResult{Indexed: true, Ready: true, Found: true, Offset: math.MaxInt64 - 1,
				PartitionState: coordapi.PartitionState{LogStartOffset: 0, HighWatermark: math.MaxInt64},
				Batch: coordapi.BatchCoord{ObjectKey: "wal/1", ObjectSize: 1 << 40, ByteOffset: 1 << 39, ByteLength: math.MaxInt32,
					BaseOffset: math.MaxInt64 - 9, LastOffset: math.MaxInt64 - 1, MaxTimestamp: math.MinInt64, LogAppendTime: true}},
				encKvGetResp, decKvGetResp)
		}},
		{"kv get flags", func(t *testing.T) {
			var e encoder
			encKvGetResp(&e, coordapi.KvGetResult{Found: true, Batch: coordapi.BatchCoord{ObjectKey: "x", ByteLength: 1}})
			e.b[0] |= 0xf0 // unknown flags are ignored
			d := decoder{b: e.b}
			if r := decKvGetResp(&d); d.err != nil || r.Batch.ObjectKey != "x" || !r.Found || r.Ready {
				t.Fatalf("unknown flags: %+v, %v", r, d.err)
			}
			// flags, offset, log start, high watermark, then the key "x":
			// make it empty.
			noKey := append([]byte{}, e.b[:4]...)
			noKey = append(noKey, 0)
			noKey = append(noKey, e.b[6:]...)
			d = decoder{b: noKey}
			if r := decKvGetResp(&d); d.err == nil {
				t.Fatalf("a batch with an empty object key decoded: %+v", r)
			}
		}},
		{"broker info", func(t *testing.T) {
			roundTrip(t, coordapi.BrokerInfo{NodeID: 3, Host: "10.0.0.3", Port: 9092, Rack: "eu-west-1a", InternalAddr: "10.0.1.3:8080"}, encBrokerInfo, decBrokerInfo)
			roundTrip(t, coordapi.BrokerInfo{NodeID: 4, Host: "h", Port: 1}, encBrokerInfo, decBrokerInfo)
		}},
		{"broker list", func(t *testing.T) {
			roundTrip(t, []coordapi.BrokerInfo{{NodeID: 1, Host: "a", Port: 1}, {NodeID: 2, Host: "b", Port: 2, Rack: "r", InternalAddr: "b:8080"}},
				encBrokerList, decBrokerList)
			roundTrip(t, []coordapi.BrokerInfo(nil), encBrokerList, decBrokerList)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, c.run)
	}
}

// multiResults is a find_batches_multi answer: partitions sharing objects,
// an error with offsets, an empty partition.
var multiResults = []coordapi.FindBatchesResult{
	{FindBatchesResponse: coordapi.FindBatchesResponse{
		PartitionState: coordapi.PartitionState{LogStartOffset: 0, HighWatermark: 30},
		Batches: []coordapi.BatchCoord{
			{ObjectKey: "wal/1", ObjectSize: 1000, ByteOffset: 0, ByteLength: 100, BaseOffset: 0, LastOffset: 9, MaxTimestamp: 5},
			{ObjectKey: "wal/2", ObjectSize: 50, ByteOffset: 0, ByteLength: 50, BaseOffset: 10, LastOffset: 19, MaxTimestamp: -1, LogAppendTime: true},
		},
	}},
	{ErrorCode: kerr.OffsetOutOfRange.Code, FindBatchesResponse: coordapi.FindBatchesResponse{
		PartitionState: coordapi.PartitionState{LogStartOffset: 7, HighWatermark: 1 << 40}}},
	{FindBatchesResponse: coordapi.FindBatchesResponse{
		PartitionState: coordapi.PartitionState{HighWatermark: 8},
		Batches: []coordapi.BatchCoord{
			{ObjectKey: "wal/2", ObjectSize: 50, ByteOffset: 10, ByteLength: 20, BaseOffset: 0, LastOffset: 7, MaxTimestamp: 1_700_000_000_000},
			{ObjectKey: "wal/1", ObjectSize: 1000, ByteOffset: 100, ByteLength: math.MaxInt32, BaseOffset: 8, LastOffset: 8, MaxTimestamp: math.MinInt64},
		},
	}},
	{ErrorCode: kerr.UnknownTopicID.Code},
	{FindBatchesResponse: coordapi.FindBatchesResponse{PartitionState: coordapi.PartitionState{LogStartOffset: 3, HighWatermark: 3}}},
}

// TestMultiReplyFit: a find_batches_multi reply built under a size limit
// holds the first results whole, then at most one trimmed to the batches
// that fit (at least one), and stays within the limit.
func TestMultiReplyFit(t *testing.T) {
	var rs []coordapi.FindBatchesResult
	for p := range 20 {
		r := coordapi.FindBatchesResult{FindBatchesResponse: coordapi.FindBatchesResponse{
			PartitionState: coordapi.PartitionState{HighWatermark: 1000}}}
		for i := range 30 {
			r.Batches = append(r.Batches, coordapi.BatchCoord{ObjectKey: fmt.Sprintf("wal/%04d-%d", i, p%2), ObjectSize: 1 << 23,
				ByteOffset: int64(p * 1000), ByteLength: 1000, BaseOffset: int64(i * 10), LastOffset: int64(i*10 + 9), MaxTimestamp: 1_700_000_000_000})
		}
		rs = append(rs, r)
	}
	var full encoder
	encFindBatchesMultiResp(&full, rs)
	for _, limit := range []int{len(full.b) + 20, len(full.b) / 2, len(full.b) / 7, 300, 120} {
		var m multiReplyEncoder
		for i := range rs {
			if added, whole := m.fit(&rs[i], limit); !added || !whole {
				break
			}
		}
		var e encoder
		m.finish(&e)
		if len(e.b) > limit {
			t.Fatalf("limit %d: %d bytes", limit, len(e.b))
		}
		d := decoder{b: e.b}
		got := decFindBatchesMultiResp(&d)
		if d.err != nil || len(got) == 0 {
			t.Fatalf("limit %d: %d results, %v", limit, len(got), d.err)
		}
		for i, r := range got {
			want := rs[i].Batches
			if i < len(got)-1 && len(r.Batches) != len(want) {
				t.Fatalf("limit %d: result %d of %d trimmed to %d batches", limit, i, len(got), len(r.Batches))
			}
			if len(r.Batches) == 0 || !reflect.DeepEqual(r.Batches, want[:len(r.Batches)]) || r.PartitionState != rs[i].PartitionState {
				t.Fatalf("limit %d: result %d: %+v", limit, i, r)
			}
		}
		if limit > len(full.b) && len(got) != len(rs) {
			t.Fatalf("limit %d above the full size: %d results", limit, len(got))
		}
	}
	// Not even one batch fits: nothing is added.
	var m multiReplyEncoder
	if added, _ := m.fit(&rs[0], 30); added || m.n != 0 || len(m.refs) != 0 || len(m.index) != 0 {
		t.Fatalf("added a result to a reply of 30 bytes: %+v", m)
	}
}

func TestNoticesRoundTrip(t *testing.T) {
	ns := []coordapi.CommitNotice{
		{TopicID: idA, Partition: 0, HighWatermark: 10},
		{TopicID: idA, Partition: 5, HighWatermark: 1 << 40, LogStartOffset: 7, Batches: []coordapi.BatchCoord{
			{ObjectKey: "wal/x", ObjectSize: 1 << 23, ByteOffset: 100, ByteLength: 50, BaseOffset: 1<<40 - 5, LastOffset: 1<<40 - 3, MaxTimestamp: 1700000000000},
			{ObjectKey: "wal/x", ObjectSize: 1 << 23, ByteOffset: 150, ByteLength: 50, BaseOffset: 1<<40 - 2, LastOffset: 1<<40 - 1, MaxTimestamp: 1700000000001, LogAppendTime: true},
		}},
		{TopicID: idB, Partition: 0, HighWatermark: 1},
		{TopicID: idA, Partition: 1, HighWatermark: 3},
	}
	var e encoder
	if n := encNotices(&e, ns, 1<<20); n != len(ns) {
		t.Fatalf("encoded %d of %d notices", n, len(ns))
	}
	got, err := decNotices(e.b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, ns) {
		t.Fatalf("got %+v, want %+v", got, ns)
	}
	// A small limit splits them over several messages, each at least one.
	var all []coordapi.CommitNotice
	for rest := ns; len(rest) > 0; {
		var e encoder
		n := encNotices(&e, rest, 80)
		if n < 1 || len(e.b) > 80 && n > 1 {
			t.Fatalf("encoded %d notices in %d bytes with limit 80", n, len(e.b))
		}
		part, err := decNotices(e.b)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, part...)
		rest = rest[n:]
	}
	if !reflect.DeepEqual(all, ns) {
		t.Fatalf("split notices: got %+v, want %+v", all, ns)
	}
}

func TestTopicNoticesRoundTrip(t *testing.T) {
	for _, ns := range [][]coordapi.TopicNotice{
		{},
		{{ID: idA, Name: "orders"}},
		{{ID: idA, Name: "a"}, {ID: idB, Name: strings.Repeat("x", 249)}},
	} {
		var e encoder
		encTopicNotices(&e, ns)
		got, err := decTopicNotices(e.b)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, ns) {
			t.Fatalf("got %+v, want %+v", got, ns)
		}
	}
	if _, err := decTopicNotices([]byte{topicNoticeVersion + 1, 0}); err == nil {
		t.Fatal("a topic notice of another version decoded")
	}
}

func TestErrorRoundTrip(t *testing.T) {
	cases := []struct {
		name     string
		err      error
		wantKerr *kerr.Error
		wantMsg  string // KafkaError message, "" when none
		internal bool
		wantText string
	}{
		{name: "kafka error", err: &coordapi.KafkaError{Code: kerr.InvalidConfig, Message: "Unknown topic config name: x"},
			wantKerr: kerr.InvalidConfig, wantMsg: "Unknown topic config name: x"},
		{name: "wrapped kerr", err: errors.Join(errors.New(`topic "x"`), kerr.UnknownTopicOrPartition),
			wantKerr: kerr.UnknownTopicOrPartition},
		{name: "wrapped kafka error", err: &wrapped{"commit object \"k\": ", &coordapi.KafkaError{Code: kerr.InvalidRequest, Message: "empty object key"}},
			wantKerr: kerr.InvalidRequest, wantMsg: "empty object key"},
		{name: "internal", err: coordapi.ErrClosed, wantKerr: kerr.KafkaStorageError, internal: true},
		{name: "unknown code", err: &kerr.Error{Message: "FUTURE", Code: 30000}, internal: false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var e encoder
			encError(&e, c.err)
			d := decoder{b: e.b}
			got := decError(&d, "op")
			var re *RemoteError
			if !errors.As(got, &re) {
				t.Fatalf("decoded %T %v, want a *RemoteError", got, got)
			}
			if got.Error() != c.err.Error() {
				t.Errorf("text %q, want %q", got.Error(), c.err.Error())
			}
			if c.wantKerr != nil && !errors.Is(got, c.wantKerr) {
				t.Errorf("%v does not wrap %v", got, c.wantKerr)
			}
			var ke *kerr.Error
			if !errors.As(got, &ke) {
				t.Fatalf("%v wraps no *kerr.Error", got)
			}
			var kafkaErr *coordapi.KafkaError
			hasMsg := errors.As(got, &kafkaErr)
			if (c.wantMsg != "") != hasMsg || hasMsg && kafkaErr.Message != c.wantMsg {
				t.Errorf("KafkaError %v, want message %q", kafkaErr, c.wantMsg)
			}
			if errors.Is(got, ErrInternal) != c.internal {
				t.Errorf("errors.Is(ErrInternal) = %v, want %v", !c.internal, c.internal)
			}
			if c.internal && !ke.Retriable {
				t.Errorf("internal error wraps %v, which is not retriable", ke)
			}
			if c.name == "unknown code" && ke.Code != 30000 {
				t.Errorf("code %d, want 30000", ke.Code)
			}
		})
	}
}

// wrapped is fmt.Errorf("%s%w") without the fmt dependency in the table.
type wrapped struct {
	prefix string
	err    error
}

func (w *wrapped) Error() string { return w.prefix + w.err.Error() }
func (w *wrapped) Unwrap() error { return w.err }

func TestDecoderRejectsForgedCounts(t *testing.T) {
	var e encoder
	e.uvarint(1 << 40) // a count no message could hold
	for name, dec := range map[string]func(*decoder){
		"topics":         func(d *decoder) { decTopicsResp(d) },
		"brokers":        func(d *decoder) { decBrokerList(d) },
		"map":            func(d *decoder) { d.strMap() },
		"str":            func(d *decoder) { d.str() },
		"multi requests": func(d *decoder) { decFindBatchesMultiReq(d) },
		"multi results":  func(d *decoder) { decFindBatchesMultiResp(d) },
	} {
		d := decoder{b: e.b}
		dec(&d)
		if !errors.Is(d.err, errMalformed) {
			t.Errorf("%s: err %v, want errMalformed", name, d.err)
		}
	}
}

func TestSplitCommit(t *testing.T) {
	req := &coordapi.CommitRequest{ObjectKey: "wal/x", ObjectSize: 1 << 30, BrokerID: 1}
	var off int64
	for i := range 5000 {
		id := idA
		if i%3 == 0 {
			id = idB
		}
		b := coordapi.CommitBatch{TopicID: id, Partition: int32(i % 600), ByteOffset: off, ByteLength: 1000,
			LastOffsetDelta: 9, MaxTimestamp: 1_700_000_000_000 + int64(i), ProducerID: int64(i), BaseSequence: int32(i)}
		if i%7 == 0 {
			b.Keys = []coordapi.KeyEntry{{Key: make([]byte, 300)}}
		}
		req.Batches = append(req.Batches, b)
		off += 1000
	}
	const limit = 16 << 10
	parts := splitCommit(req, limit)
	if len(parts) < 2 {
		t.Fatalf("%d parts", len(parts))
	}
	var joined []coordapi.CommitBatch
	for i, p := range parts {
		if p.ObjectKey != req.ObjectKey || p.ObjectSize != req.ObjectSize || p.BrokerID != req.BrokerID {
			t.Fatalf("part %d: %+v", i, p)
		}
		e := encoder{}
		e.byte(version)
		e.uvarint(5000)
		encCommitReq(&e, p)
		if len(e.b) > limit {
			t.Fatalf("part %d encodes to %d bytes, limit %d", i, len(e.b), limit)
		}
		joined = append(joined, p.Batches...)
	}
	if !reflect.DeepEqual(joined, req.Batches) {
		t.Fatal("parts do not add up to the request")
	}
}

// TestTxnOffsetCommitGroupReq: a txn_offset_commit carries the topic ids
// the broker resolved beside the Kafka body (which has them only from v6),
// and a v6 body whose ids disagree with them does not decode.
func TestTxnOffsetCommitGroupReq(t *testing.T) {
	for _, v := range []int16{0, 3, 4, 6} {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			req := kmsg.NewPtrTxnOffsetCommitRequest()
			req.Version, req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = v, "tx", "g", 7, 2
			req.Generation, req.MemberID = 3, "m"
			req.Topics = []kmsg.TxnOffsetCommitRequestTopic{
				{Topic: "a", TopicID: idA, Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{{Partition: 1, Offset: 5, LeaderEpoch: -1}}},
				{Topic: "b", TopicID: idB, Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{{Partition: 0, Offset: 9, LeaderEpoch: -1}}},
			}
			var e encoder
			encGroupReq(&e, coordapi.ClientInfo{ID: "c"}, req)
			d := decoder{b: e.b}
			c, got := decGroupReq(&d, kmsg.TxnOffsetCommit)
			if d.err != nil {
				t.Fatal(d.err)
			}
			tr := got.(*kmsg.TxnOffsetCommitRequest)
			if c.ID != "c" || tr.Version != v || tr.ProducerID != 7 || tr.ProducerEpoch != 2 || len(tr.Topics) != 2 ||
				tr.Topics[0].TopicID != idA || tr.Topics[1].TopicID != idB || tr.Topics[1].Partitions[0].Offset != 9 {
				t.Fatalf("decoded %+v", tr)
			}
			if v < 6 && (tr.Topics[0].Topic != "a" || tr.Topics[1].Topic != "b") {
				t.Fatalf("topic names %q %q", tr.Topics[0].Topic, tr.Topics[1].Topic)
			}
			if v < 6 {
				return
			}
			// The body's ids are the request's; ids beside it that
			// differ make it invalid.
			bad := *req
			bad.Topics = slices.Clone(req.Topics)
			bad.Topics[0].TopicID = idB
			var be encoder
			be.varint(int64(v))
			be.str("")
			be.str("")
			be.uvarint(2)
			be.id(idA)
			be.id(idB)
			be.b = bad.AppendTo(be.b)
			bd := decoder{b: be.b}
			if decGroupReq(&bd, kmsg.TxnOffsetCommit); bd.err == nil {
				t.Fatal("decoded a v6 body whose topic ids differ from the broker's")
			}
		})
	}
}
