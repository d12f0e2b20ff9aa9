package rpc

import (
	"testing"

	"github.com/floe-io/floe/coordapi"
)

// commit1600 is a commit of 1,600 idempotent batches over 600 partitions
// of 6 topics, the shape of a full object under load.
func commit1600() *coordapi.CommitRequest {
	req := &coordapi.CommitRequest{ObjectKey: "prefix/wal/0192f6a0-0000-7000-8000-000000000001", ObjectSize: 1600 * 5000, BrokerID: 1,
		Batches: make([]coordapi.CommitBatch, 1600)}
	for j := range req.Batches {
		part := j % 600
		req.Batches[j] = coordapi.CommitBatch{TopicID: coordapi.TopicID{0: byte(part / 100)}, Partition: int32(part % 100),
			ByteOffset: int64(j * 5000), ByteLength: 5000, LastOffsetDelta: 9, MaxTimestamp: 1_700_000_000_000 + int64(j%50),
			ProducerID: int64(part % 100), BaseSequence: int32(j * 10)}
	}
	return req
}

// BenchmarkEncodeCommit1600 is the client's encoding cost of a full commit.
func BenchmarkEncodeCommit1600(b *testing.B) {
	req := commit1600()
	var e encoder
	b.ReportAllocs()
	for range b.N {
		e.b = e.b[:0]
		encCommitReq(&e, req)
	}
	b.ReportMetric(float64(len(e.b)), "bytes")
}

// BenchmarkDecodeCommit1600 is the server's decoding cost of a full commit.
func BenchmarkDecodeCommit1600(b *testing.B) {
	var e encoder
	encCommitReq(&e, commit1600())
	b.ReportAllocs()
	for range b.N {
		d := decoder{b: e.b}
		decCommitReq(&d)
		if d.err != nil {
			b.Fatal(d.err)
		}
	}
}
