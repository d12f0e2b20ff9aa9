package rpc

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/table/catalog"
)

// Decoders read bytes from the network: whatever they are given, they
// must not panic or allocate beyond the input, and what they accept must
// survive a re-encoding unchanged.
//
//	go test ./coordinator/rpc -run '^$' -fuzz FuzzDecodeRequest -fuzztime 1m

// fuzzCodec decodes data with dec; if that succeeds, the value must encode
// and decode back to itself.
func fuzzCodec[T any](t *testing.T, data []byte, enc func(*encoder, T), dec func(*decoder) T) {
	d := decoder{b: data}
	v := dec(&d)
	if d.err != nil {
		return
	}
	var e encoder
	enc(&e, v)
	d2 := decoder{b: e.b}
	v2 := dec(&d2)
	if d2.err != nil {
		t.Fatalf("re-encoding of %+v does not decode: %v", v, d2.err)
	}
	if d2.left() != 0 {
		t.Fatalf("re-encoding of %+v leaves %d bytes", v, d2.left())
	}
	if !reflect.DeepEqual(v, v2) {
		t.Fatalf("re-encoding changed the value:\n%+v\n%+v", v, v2)
	}
}

// requestCodecs check the body of every op's request.
var requestCodecs = []func(t *testing.T, data []byte){
	func(t *testing.T, b []byte) { fuzzCodec(t, b, encCreateTopicReq, decCreateTopicReq) },
	func(t *testing.T, b []byte) { fuzzCodec(t, b, encString, decString) },
	func(t *testing.T, b []byte) { fuzzCodec(t, b, encID, decID) },
	func(t *testing.T, b []byte) { fuzzCodec(t, b, encCreatePartitionsReq, decCreatePartitionsReq) },
	func(t *testing.T, b []byte) { fuzzCodec(t, b, encAlterConfigsReq, decAlterConfigsReq) },
	func(t *testing.T, b []byte) { fuzzCodec(t, b, encTopicsReq, decTopicsReq) },
	func(t *testing.T, b []byte) { fuzzCodec(t, b, encFindBatchesReq, decFindBatchesReq) },
	func(t *testing.T, b []byte) { fuzzCodec(t, b, encFindBatchesMultiReq, decFindBatchesMultiReq) },
	func(t *testing.T, b []byte) { fuzzCodec(t, b, encTopicPartitionReq, decTopicPartitionReq) },
	func(t *testing.T, b []byte) { fuzzCodec(t, b, encListOffsetReq, decListOffsetReq) },
	func(t *testing.T, b []byte) { fuzzCodec(t, b, encDeleteRecordsReq, decDeleteRecordsReq) },
	func(t *testing.T, b []byte) { fuzzCodec(t, b, encInitProducerIDReq, decInitProducerIDReq) },
	func(t *testing.T, b []byte) { fuzzCodec(t, b, encCommitReq, decCommitReq) },
	func(t *testing.T, b []byte) { fuzzCodec(t, b, encBrokerInfo, decBrokerInfo) },
	func(t *testing.T, b []byte) { fuzzCodec(t, b, encKvLookupReq, decKvLookupReq) },
	func(t *testing.T, b []byte) { fuzzCodec(t, b, encKvGetReq, decKvGetReq) },
	func(t *testing.T, b []byte) { fuzzCodec(t, b, encClaimTierJobReq, decClaimTierJobReq) },
	func(t *testing.T, b []byte) { fuzzCodec(t, b, encCompleteTierJobReq, decCompleteTierJobReq) },
	func(t *testing.T, b []byte) { fuzzCodec(t, b, encKvOffsetsReq, decKvOffsetsReq) },
	func(t *testing.T, b []byte) { fuzzCodec(t, b, encAbandonTierJobReq, decAbandonTierJobReq) },
	func(t *testing.T, b []byte) { fuzzCodec(t, b, encUserScramReq, decUserScramReq) },
	func(t *testing.T, b []byte) { fuzzCodec(t, b, encAddPartitionsReq, decAddPartitionsReq) },
	func(t *testing.T, b []byte) { fuzzCodec(t, b, encAddOffsetsReq, decAddOffsetsReq) },
	func(t *testing.T, b []byte) { fuzzCodec(t, b, encEndTxnReq, decEndTxnReq) },
	func(t *testing.T, b []byte) { fuzzCodec(t, b, encListTxnsReq, decListTxnsReq) },
	func(t *testing.T, b []byte) { fuzzCodec(t, b, encStrings, decStrings) },
	func(t *testing.T, b []byte) { fuzzCodec(t, b, encAlterUserScramReq, decAlterUserScramReq) },
	func(t *testing.T, b []byte) { fuzzCodec(t, b, encACLBindings, decACLBindings) },
	func(t *testing.T, b []byte) { fuzzCodec(t, b, encACLFilters, decACLFilters) },
	func(t *testing.T, b []byte) { fuzzCodec(t, b, encDescribeACLsReq, decDescribeACLsReq) },
	func(t *testing.T, b []byte) { fuzzCodec(t, b, encFindKeyBatchesReq, decFindKeyBatchesReq) },
	func(t *testing.T, b []byte) { fuzzCodec(t, b, encIdent, decIdent) },
	func(t *testing.T, b []byte) { fuzzCodec(t, b, encTableSwapReq, decTableSwapReq) },
	func(t *testing.T, b []byte) { fuzzCodec(t, b, encFenceReq, decFenceReq) },
	func(t *testing.T, b []byte) { fuzzCodec(t, b, encCommitShardsReq, decCommitShardsReq) },
	func(t *testing.T, b []byte) { fuzzCodec(t, b, encExportReq, decExportReq) },
	func(t *testing.T, b []byte) { fuzzCodec(t, b, encPartitionChunk, decPartitionChunk) },
	fuzzGroupReq,
}

// fuzzGroupReq decodes data as every group op's request: what decodes
// must re-encode to bytes that decode and re-encode to the same bytes.
func fuzzGroupReq(t *testing.T, data []byte) {
	for op, g := range groupOps {
		d := decoder{b: data}
		c, req := decGroupReq(&d, g.key)
		if d.err != nil {
			continue
		}
		var e1 encoder
		encGroupReq(&e1, c, req)
		d2 := decoder{b: e1.b}
		c2, req2 := decGroupReq(&d2, g.key)
		if d2.err != nil {
			t.Fatalf("%s: re-encoding does not decode: %v", op, d2.err)
		}
		var e2 encoder
		encGroupReq(&e2, c2, req2)
		if !bytes.Equal(e1.b, e2.b) || c != c2 {
			t.Fatalf("%s: re-encoding changed the request:\n%x\n%x", op, e1.b, e2.b)
		}
	}
}

// responseCodecs check the body of every op's response.
var responseCodecs = []func(t *testing.T, data []byte){
	func(t *testing.T, b []byte) { fuzzCodec(t, b, encTopic, decTopic) },
	func(t *testing.T, b []byte) { fuzzCodec(t, b, encUserScramResp, decUserScramResp) },
	func(t *testing.T, b []byte) { fuzzCodec(t, b, encCodes, decCodes) },
	func(t *testing.T, b []byte) { fuzzCodec(t, b, encTxnDescriptions, decTxnDescriptions) },
	func(t *testing.T, b []byte) { fuzzCodec(t, b, encTxnListings, decTxnListings) },
	func(t *testing.T, b []byte) { fuzzCodec(t, b, encProducerDescriptions, decProducerDescriptions) },
	func(t *testing.T, b []byte) { fuzzCodec(t, b, encScramUserInfos, decScramUserInfos) },
	func(t *testing.T, b []byte) { fuzzCodec(t, b, encScramUserResults, decScramUserResults) },
	func(t *testing.T, b []byte) { fuzzCodec(t, b, encTopicsResp, decTopicsResp) },
	func(t *testing.T, b []byte) { fuzzCodec(t, b, encPartitionState, decPartitionState) },
	func(t *testing.T, b []byte) { fuzzCodec(t, b, encFindBatchesResp, decFindBatchesResp) },
	func(t *testing.T, b []byte) { fuzzCodec(t, b, encFindBatchesMultiResp, decFindBatchesMultiResp) },
	func(t *testing.T, b []byte) { fuzzCodec(t, b, encListOffsetResp, decListOffsetResp) },
	func(t *testing.T, b []byte) { fuzzCodec(t, b, encInt64, decInt64) },
	func(t *testing.T, b []byte) { fuzzCodec(t, b, encInitProducerIDResp, decInitProducerIDResp) },
	func(t *testing.T, b []byte) { fuzzCodec(t, b, encCommitResp, decCommitResp) },
	func(t *testing.T, b []byte) { fuzzCodec(t, b, encBrokerList, decBrokerList) },
	func(t *testing.T, b []byte) { fuzzCodec(t, b, encObjectStates, decObjectStates) },
	func(t *testing.T, b []byte) { fuzzCodec(t, b, encTxnViewResp, decTxnViewResp) },
	func(t *testing.T, b []byte) { fuzzCodec(t, b, encClusterInfo, decClusterInfo) },
	func(t *testing.T, b []byte) { fuzzCodec(t, b, encPartitionChunk, decPartitionChunk) },
	func(t *testing.T, b []byte) { fuzzCodec(t, b, encKvLookupResp, decKvLookupResp) },
	func(t *testing.T, b []byte) { fuzzCodec(t, b, encKvGetResp, decKvGetResp) },
	func(t *testing.T, b []byte) { fuzzCodec(t, b, encBool, decBool) },
	func(t *testing.T, b []byte) { fuzzCodec(t, b, encClaimTierJobResp, decClaimTierJobResp) },
	func(t *testing.T, b []byte) { fuzzCodec(t, b, encOffsets, decOffsets) },
	func(t *testing.T, b []byte) { fuzzCodec(t, b, encDeleteACLsResp, decDeleteACLsResp) },
	func(t *testing.T, b []byte) { fuzzCodec(t, b, encDescribeACLsResp, decDescribeACLsResp) },
	func(t *testing.T, b []byte) { fuzzCodec(t, b, encUvarint, decUvarint) },
	func(t *testing.T, b []byte) { _, _ = decACLNotice(b) },
	func(t *testing.T, b []byte) { fuzzCodec(t, b, encFindKeyBatchesResp, decFindKeyBatchesResp) },
	func(t *testing.T, b []byte) { fuzzCodec(t, b, encTableResp, decTableResp) },
	func(t *testing.T, b []byte) { fuzzCodec(t, b, encIdents, decIdents) },
	func(t *testing.T, b []byte) { fuzzCodec(t, b, encNamespaces, decNamespaces) },
	func(t *testing.T, b []byte) {
		d := decoder{b: b}
		_ = decError(&d, "op")
	},
}

func seed(f *testing.F, enc func(*encoder)) {
	var e encoder
	enc(&e)
	f.Add(e.b)
}

func FuzzDecodeRequest(f *testing.F) {
	seed(f, func(e *encoder) {
		encCommitReq(e, &coordapi.CommitRequest{ObjectKey: "wal/1", ObjectSize: 300, BrokerID: 1, Batches: []coordapi.CommitBatch{
			{TopicID: idA, ByteLength: 100, LastOffsetDelta: 1, ProducerID: -1},
			{TopicID: idB, Partition: 2, ByteOffset: 100, ByteLength: 200, ProducerID: 5, BaseSequence: 9,
				Keys: []coordapi.KeyEntry{{Key: []byte("k"), Tombstone: true}}},
		}})
	})
	seed(f, func(e *encoder) { // a transactional batch and a commit marker
		encCommitReq(e, &coordapi.CommitRequest{ObjectKey: "wal/txn-1", ObjectSize: 200, BrokerID: -1, Batches: []coordapi.CommitBatch{
			{TopicID: idA, ByteLength: 100, ProducerID: 7, Transactional: true, TransactionalID: "tx"},
			{TopicID: idA, ByteOffset: 100, ByteLength: 100, ProducerID: 7, BaseSequence: -1, Transactional: true, Control: true, Commit: true},
		}})
	})
	seed(f, func(e *encoder) {
		encBrokerInfo(e, coordapi.BrokerInfo{NodeID: 1, Host: "h", Port: 9092, Rack: "a", InternalAddr: "h:8080"})
	})
	seed(f, func(e *encoder) { encKvGetReq(e, coordapi.KvGetRequest{TopicID: idA, Partition: 1, Key: []byte("k")}) })
	seed(f, func(e *encoder) {
		encFindKeyBatchesReq(e, coordapi.FindKeyBatchesRequest{TopicID: idA, Partition: 1, Key: []byte("k"), Offset: 9, MaxBytes: 1 << 20})
	})
	seed(f, func(e *encoder) {
		encCreateTopicReq(e, coordapi.CreateTopicRequest{Name: "t", Partitions: 3, Configs: map[string]string{"a": "b"}})
	})
	seed(f, func(e *encoder) {
		encAlterConfigsReq(e, alterConfigsReq{Name: "t", Ops: []coordapi.ConfigOp{{Name: "a", Value: strp("b")}}})
	})
	seed(f, func(e *encoder) {
		encInitProducerIDReq(e, coordapi.InitProducerIDRequest{TransactionalID: strp("x"), ProducerID: -1})
	})
	seed(f, func(e *encoder) {
		encFindBatchesMultiReq(e, []coordapi.FindBatchesRequest{{TopicID: idA, Offset: 5, MaxBytes: 1 << 20}, {TopicID: idB, Partition: 3}})
	})
	seed(f, func(e *encoder) {
		req := kmsg.NewPtrJoinGroupRequest()
		req.Version, req.Group, req.ProtocolType = 9, "g", "consumer"
		req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{1, 2}}}
		encGroupReq(e, coordapi.ClientInfo{ID: "c", Host: "/127.0.0.1"}, req)
	})
	seed(f, func(e *encoder) {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Version, req.Group = 9, "g"
		req.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "t", TopicID: idA, Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 1, Offset: 5}}}}
		encGroupReq(e, coordapi.ClientInfo{}, req)
	})
	for _, v := range []int16{4, 6} {
		seed(f, func(e *encoder) {
			req := kmsg.NewPtrTxnOffsetCommitRequest()
			req.Version, req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = v, "tx", "g", 7, 1
			req.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: "t", TopicID: idA, Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{{Partition: 1, Offset: 5}}}}
			encGroupReq(e, coordapi.ClientInfo{}, req)
		})
	}
	seed(f, func(e *encoder) {
		req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
		req.Version = 1
		req.Groups = []kmsg.DescribeShareGroupOffsetsRequestGroup{{GroupID: "sg"}, {GroupID: "sg2",
			Topics: []kmsg.DescribeShareGroupOffsetsRequestGroupTopic{{Topic: "t", Partitions: []int32{0, 2}}}}}
		encGroupReq(e, coordapi.ClientInfo{}, req)
	})
	seed(f, func(e *encoder) {
		req := kmsg.NewPtrAlterShareGroupOffsetsRequest()
		req.GroupID = "sg"
		req.Topics = []kmsg.AlterShareGroupOffsetsRequestTopic{{Topic: "t", Partitions: []kmsg.AlterShareGroupOffsetsRequestTopicPartition{{Partition: 1, StartOffset: 8}}}}
		encGroupReq(e, coordapi.ClientInfo{}, req)
	})
	seed(f, func(e *encoder) {
		req := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
		req.GroupID = "sg"
		req.Topics = []kmsg.DeleteShareGroupOffsetsRequestTopic{{Topic: "t"}}
		encGroupReq(e, coordapi.ClientInfo{}, req)
	})
	seed(f, func(e *encoder) {
		encACLBindings(e, []coordapi.ACLBinding{{ResourceType: kmsg.ACLResourceTypeTopic, ResourceName: "t", PatternType: kmsg.ACLResourcePatternTypeLiteral,
			Principal: "User:a", Host: "*", Operation: kmsg.ACLOperationRead, Permission: kmsg.ACLPermissionTypeAllow}})
	})
	seed(f, func(e *encoder) {
		encACLFilters(e, []coordapi.ACLFilter{coordapi.ACLFilterAll, {ResourceName: strp("t"), Host: strp("*")}})
	})
	seed(f, func(e *encoder) {
		encClaimTierJobReq(e, coordapi.ClaimTierJobRequest{BrokerID: 3, Tables: true, TableMaintain: true, TableWAL: true})
	})
	seed(f, func(e *encoder) {
		encCompleteTierJobReq(e, coordapi.CompleteTierJobRequest{JobID: 9, TopicID: idA, Partition: -1,
			Table: &coordapi.TableResult{SnapshotID: 77, Rows: 12, Covered: []coordapi.TableCovered{{Partition: 0, Next: 40}, {Partition: 2, Next: 31}}}})
	})
	seed(f, func(e *encoder) { encFenceReq(e, fenceReq{ID: idA, Partition: 7, Version: 2}) })
	seed(f, func(e *encoder) { encCommitShardsReq(e, commitShardsReq{Shards: 3, Version: 2}) })
	seed(f, func(e *encoder) {
		encExportReq(e, exportReq{ID: idA, Partition: 7, Cursor: []byte("b\x01"), MaxBytes: 4096})
	})
	seed(f, func(e *encoder) {
		encPartitionChunk(e, coordapi.PartitionChunk{TopicID: idA, Partition: 7, First: true,
			Rows:    []coordapi.ChunkRow{{Key: []byte("b1"), Value: []byte{2, 0, 5}}, {Key: []byte("k1"), Value: []byte{0, 1}}},
			Objects: []coordapi.ChunkObject{{Num: 5, Key: "wal/a", Size: 100, CreatedMs: 1_700_000_000_000, BrokerID: 3}},
			Cursor:  []byte("k1"), TableCovered: -1})
	})
	seed(f, func(e *encoder) {
		encTableSwapReq(e, tableSwapReq{ID: catalog.Ident{Namespace: []string{"floe", "eu"}, Name: "orders"},
			Prev: "s3://b/tables/floe/orders/metadata/00001.metadata.json", Next: "s3://b/tables/floe/orders/metadata/00002.metadata.json"})
	})
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, check := range requestCodecs {
			check(t, data)
		}
	})
}

func FuzzDecodeReply(f *testing.F) {
	seed(f, func(e *encoder) {
		encFindBatchesResp(e, coordapi.FindBatchesResponse{Batches: []coordapi.BatchCoord{
			{ObjectKey: "a", ObjectSize: 10, ByteLength: 10, LastOffset: 3},
			{ObjectKey: "a", ObjectSize: 10, ByteOffset: 10, BaseOffset: 4, LastOffset: 5, LogAppendTime: true},
		}})
	})
	seed(f, func(e *encoder) {
		seg := coordapi.BatchCoord{ObjectKey: "s", ObjectSize: 100, ByteLength: 90, LastOffset: 9, Segment: true}
		encFindKeyBatchesResp(e, coordapi.FindKeyBatchesResponse{Ready: true, Through: 12, Batches: []coordapi.KeyBatch{
			{Coord: seg, BaseOffset: 2, LastOffset: 3},
			{Coord: coordapi.BatchCoord{ObjectKey: "a", ObjectSize: 10, ByteLength: 10, BaseOffset: 10, LastOffset: 11}, BaseOffset: 10, LastOffset: 11},
		}})
	})
	seed(f, func(e *encoder) {
		encTopicsResp(e, topicsResp{Topics: []coordapi.Topic{{ID: idA, Name: "a", Configs: map[string]string{"x": "y"}}}})
	})
	seed(f, func(e *encoder) { encFindBatchesMultiResp(e, multiResults) })
	seed(f, func(e *encoder) {
		encBrokerList(e, []coordapi.BrokerInfo{{NodeID: 1, Host: "a", Port: 1, Rack: "z", InternalAddr: "a:8080"}, {NodeID: 2, Host: "b", Port: 2}})
	})
	seed(f, func(e *encoder) {
		encKvGetResp(e, coordapi.KvGetResult{Indexed: true, Ready: true, Found: true, Offset: 4,
			PartitionState: coordapi.PartitionState{HighWatermark: 9},
			Batch:          coordapi.BatchCoord{ObjectKey: "a", ObjectSize: 10, ByteLength: 10, BaseOffset: 3, LastOffset: 5}})
	})
	seed(f, func(e *encoder) { encError(e, &coordapi.KafkaError{Code: kerr.InvalidConfig, Message: "m"}) })
	seed(f, func(e *encoder) {
		encClaimTierJobResp(e, claimTierJobResp{OK: true, Job: coordapi.TierJob{ID: 3, TopicID: idA, LastOffset: 5,
			Batches: []coordapi.BatchCoord{{ObjectKey: "a", ObjectSize: 10, ByteLength: 10, LastOffset: 5, Segment: true}}}})
	})
	seed(f, func(e *encoder) {
		encClaimTierJobResp(e, claimTierJobResp{OK: true, Job: coordapi.TierJob{ID: 4, TopicID: idA, LastOffset: 5, Kind: coordapi.TierJobCompact,
			Compact: &coordapi.CompactJob{Segments: []coordapi.BatchCoord{{ObjectKey: "a", ObjectSize: 10, ByteLength: 10, LastOffset: 5, Segment: true}},
				ProducerLastOffsets: []int64{2, 5}}}})
	})
	seed(f, func(e *encoder) {
		encCommitResp(e, &coordapi.CommitResponse{Results: []coordapi.BatchResult{{BaseOffset: 5}}})
	})
	seed(f, func(e *encoder) {
		encDeleteACLsResp(e, deleteACLsResp{Deleted: [][]coordapi.ACLBinding{nil, {{ResourceType: kmsg.ACLResourceTypeGroup, ResourceName: "g", PatternType: kmsg.ACLResourcePatternTypePrefixed,
			Principal: "User:*", Host: "10.0.0.1", Operation: kmsg.ACLOperationAll, Permission: kmsg.ACLPermissionTypeDeny}}}})
	})
	seed(f, func(e *encoder) { encACLNotice(e, 7) })
	seed(f, func(e *encoder) { encClusterInfo(e, coordapi.ClusterInfo{Shards: 3, Shard: 2, MapVersion: 1}) })
	seed(f, func(e *encoder) {
		encPartitionChunk(e, coordapi.PartitionChunk{TopicID: idA, Partition: 7, First: true,
			Rows:    []coordapi.ChunkRow{{Key: []byte("b1"), Value: []byte{2, 0, 5}}, {Key: []byte("k1"), Value: []byte{0, 1}}},
			Objects: []coordapi.ChunkObject{{Num: 5, Key: "wal/a", Size: 100, CreatedMs: 1_700_000_000_000, BrokerID: 3}},
			Cursor:  []byte("k1"), TableCovered: -1})
	})
	seed(f, func(e *encoder) {
		encPartitionChunk(e, coordapi.PartitionChunk{TopicID: idA, Partition: 7, Done: true, Checkpoint: []byte{3, 0, 9},
			Producers: []coordapi.ChunkRow{{Key: []byte("r1"), Value: []byte{1, 0}}}, TableCovered: 42})
	})
	seed(f, func(e *encoder) {
		encPartitionChunk(e, coordapi.PartitionChunk{TopicID: idA, Partition: 7, Gone: true, TableCovered: -1})
	})
	seed(f, func(e *encoder) {
		encObjectStates(e, []coordapi.ObjectState{{}, {Known: true}, {Known: true, GarbageSinceMs: 1_700_000_000_000}})
	})
	seed(f, func(e *encoder) {
		encTxnViewResp(e, txnViewResp{Found: true, View: coordapi.TxnView{TransactionalID: "tx", Epoch: 3, Ongoing: true,
			Partitions: []coordapi.TopicPartition{{TopicID: idA, Partition: 2}}}})
	})
	seed(f, func(e *encoder) {
		encClaimTierJobResp(e, claimTierJobResp{OK: true, Job: coordapi.TierJob{ID: 5, TopicID: idA, Partition: -1, Kind: coordapi.TierJobTable,
			Table: &coordapi.TableJob{TopicName: "orders", Partitioning: "day(timestamp)", ValueSchema: `{"type":"object"}`,
				Ranges: []coordapi.TableRange{{Partition: 1, From: 3, To: 9,
					Segments: []coordapi.BatchCoord{{ObjectKey: "s", ObjectSize: 100, ByteLength: 90, LastOffset: 9, Segment: true}},
					Aborted:  []coordapi.AbortedTxn{{ProducerID: 4, FirstOffset: 5, LastOffset: 6}}}}}}})
	})
	seed(f, func(e *encoder) {
		encClaimTierJobResp(e, claimTierJobResp{OK: true, Job: coordapi.TierJob{ID: 6, TopicID: idA, Partition: -2, Kind: coordapi.TierJobTableMaintain,
			Maintain: &coordapi.TableMaintainJob{TopicName: "orders", NowMs: 1_700_000_000_000, RetentionMs: -1, OrphanGraceMs: 3_600_000}}})
	})
	seed(f, func(e *encoder) { encTableResp(e, tableResp{Location: "s3://b/m.json"}) })
	seed(f, func(e *encoder) { encTableResp(e, tableResp{Outcome: tableConflict, Message: "current s3://b/n.json"}) })
	seed(f, func(e *encoder) {
		encIdents(e, []catalog.Ident{{Namespace: []string{"floe"}, Name: "a"}, {Namespace: []string{"floe"}, Name: "b"}})
	})
	seed(f, func(e *encoder) { encNamespaces(e, [][]string{{"floe"}, {"lake", "eu"}}) })
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, check := range responseCodecs {
			check(t, data)
		}
	})
}

func FuzzDecodeNotices(f *testing.F) {
	seed(f, func(e *encoder) {
		encNotices(e, []coordapi.CommitNotice{{TopicID: idA, HighWatermark: 5}, {TopicID: idB, Partition: 1, HighWatermark: 9}}, 1<<20)
	})
	f.Fuzz(func(t *testing.T, data []byte) {
		ns, err := decNotices(data)
		if err != nil {
			return
		}
		var e encoder
		if n := encNotices(&e, ns, 1<<30); n != len(ns) {
			t.Fatalf("re-encoded %d of %d notices", n, len(ns))
		}
		again, err := decNotices(e.b)
		if err != nil || !reflect.DeepEqual(again, ns) {
			t.Fatalf("re-encoding changed notices: %v\n%+v\n%+v", err, ns, again)
		}
	})
}

func FuzzDecodeTopicNotices(f *testing.F) {
	seed(f, func(e *encoder) {
		encTopicNotices(e, []coordapi.TopicNotice{{ID: idA, Name: "a"}, {ID: idB, Name: "b.c-d_e"}})
	})
	f.Fuzz(func(t *testing.T, data []byte) {
		ns, err := decTopicNotices(data)
		if err != nil {
			return
		}
		var e encoder
		encTopicNotices(&e, ns)
		again, err := decTopicNotices(e.b)
		if err != nil || !reflect.DeepEqual(again, ns) {
			t.Fatalf("re-encoding changed topic notices: %v\n%+v\n%+v", err, ns, again)
		}
	})
}
