package rpc

import (
	"testing"

	"github.com/floe-io/floe/coordapi"
)

// The share ops' codecs: what the broker and the coordinator exchange for
// every ShareFetch and ShareAcknowledge.

func encShareAcquireReqV(e *encoder, r coordapi.ShareAcquireRequest) { encShareAcquireReq(e, &r) }
func encShareReleaseReqV(e *encoder, r coordapi.ShareReleaseRequest) { encShareReleaseReq(e, &r) }

var shareAcquireReqs = []coordapi.ShareAcquireRequest{
	{},
	{Group: "g", Member: "m", Via: 3, MaxRecords: 500, BatchSize: 500, Mode: coordapi.ShareAcquireRecordLimit, MaxBytes: 1 << 20, MaxWaitMs: 500,
		Partitions: []coordapi.ShareAcquirePartition{
			{Topic: idA, Partition: 1, Fetch: true},
			{Topic: idB, Partition: 0, Acks: []coordapi.ShareAckBatch{{First: 5, Last: 9, Types: []int8{1}}, {First: 10, Last: 12, Types: []int8{0, 2, 3}}}},
		}},
	{Group: "g", Member: "m", Renew: true, Partitions: []coordapi.ShareAcquirePartition{{Topic: idA, Acks: []coordapi.ShareAckBatch{{First: 1, Last: 1, Types: []int8{4}}}}}},
}

var shareAcquireResps = []coordapi.ShareAcquireResponse{
	{},
	{LockDurationMs: 30000, Partitions: []coordapi.ShareAcquired{
		{Topic: idA, Partition: 1, PartitionState: coordapi.PartitionState{LogStartOffset: 0, HighWatermark: 20, LastStableOffset: 18},
			Acquired: []coordapi.ShareAcquiredRecords{{First: 0, Last: 4, DeliveryCount: 1}, {First: 5, Last: 9, DeliveryCount: 3}},
			Batches: []coordapi.BatchCoord{
				{ObjectKey: "wal/1", ObjectSize: 900, ByteLength: 100, BaseOffset: 0, LastOffset: 4},
				{ObjectKey: "wal/2", ObjectSize: 500, ByteOffset: 100, ByteLength: 100, BaseOffset: 5, LastOffset: 9, LogAppendTime: true},
			},
			Aborted: []coordapi.AbortedTxn{{ProducerID: 7, FirstOffset: 2, LastOffset: 3}}},
		{Topic: idB, AckErrorCode: 121, AckErrorMessage: "offset 3: available, not acquired", ErrorCode: 56,
			Batches: []coordapi.BatchCoord{{ObjectKey: "wal/1", ObjectSize: 900, ByteLength: 800, BaseOffset: 0, LastOffset: 99, Segment: true}}},
	}},
}

var shareReleaseReqs = []coordapi.ShareReleaseRequest{
	{Group: "g", Member: "m", Via: 2},
	{Group: "g", Member: "m", Via: 2, Partitions: []coordapi.TopicPartition{}},
	{Group: "g", Member: "m", Via: 2, Partitions: []coordapi.TopicPartition{{TopicID: idA, Partition: 3}, {TopicID: idB}}},
}

// TestShareCodecs: every share op's request and reply decode to what was
// encoded, and a reply naming an object outside its table is refused.
func TestShareCodecs(t *testing.T) {
	for _, r := range shareAcquireReqs {
		roundTrip(t, r, encShareAcquireReqV, decShareAcquireReq)
	}
	for _, r := range shareAcquireResps {
		roundTrip(t, r, encShareAcquireResp, decShareAcquireResp)
	}
	for _, r := range shareReleaseReqs {
		roundTrip(t, r, encShareReleaseReqV, decShareReleaseReq)
	}
	// One partition with one batch, and an empty object table.
	var e encoder
	e.varint(30000)
	e.uvarint(0) // objects
	e.uvarint(1) // partitions
	e.id(idA)
	e.varint(0)
	e.varint(0)
	e.varint(0)
	e.str("")
	encPartitionState(&e, coordapi.PartitionState{})
	e.uvarint(0) // acquired
	e.uvarint(1) // batches
	e.uvarint(0) // object index
	encBatchPlace(&e, &coordapi.BatchCoord{ByteLength: 1})
	encAborted(&e, nil)
	d := decoder{b: e.b}
	if decShareAcquireResp(&d); d.err == nil {
		t.Fatal("a batch naming a missing object decoded")
	}
}

// FuzzDecodeShare decodes arbitrary bytes as every share op's request and
// reply: no panic, no allocation beyond the input, and what decodes
// survives a re-encoding.
//
//	go test ./coordinator/rpc -run '^$' -fuzz FuzzDecodeShare -fuzztime 1m
func FuzzDecodeShare(f *testing.F) {
	for _, r := range shareAcquireReqs {
		seed(f, func(e *encoder) { encShareAcquireReq(e, &r) })
	}
	for _, r := range shareAcquireResps {
		seed(f, func(e *encoder) { encShareAcquireResp(e, r) })
	}
	for _, r := range shareReleaseReqs {
		seed(f, func(e *encoder) { encShareReleaseReq(e, &r) })
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzCodec(t, data, encShareAcquireReqV, decShareAcquireReq)
		fuzzCodec(t, data, encShareAcquireResp, decShareAcquireResp)
		fuzzCodec(t, data, encShareReleaseReqV, decShareReleaseReq)
	})
}
