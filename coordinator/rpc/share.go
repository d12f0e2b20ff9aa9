package rpc

import (
	"context"
	"math"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-io/floe/coordapi"
)

// share_acquire carries one ShareFetch or ShareAcknowledge to the group
// coordinator (groups.Groups.ShareAcquire), and share_release gives back a
// member's records when its share session on a broker ends. Both go only
// to a server with ServerOptions.Groups. A held share_acquire may wait up
// to its MaxWaitMs, so its timeout is that plus shareWaitSlack.
//
//	acquire request  group, member (str), via, renew, max records,
//	                 batch size, mode, max bytes, max wait ms,
//	                 n partitions × (topic id(16), partition, fetch,
//	                   n acks × (first, last - first, n types × type))
//	acquire reply    lock duration ms, n objects × (key (str), size),
//	                 n partitions × (topic id(16), partition, error code,
//	                   ack error code, ack error message (str),
//	                   partition state, n acquired × (first,
//	                   last - first, delivery count), n batches × (object
//	                   index, batch place), aborted transactions)
//	release request  group, member (str), via, all (bool),
//	                 n partitions × (topic id(16), partition)
//	release reply    empty
const (
	opShareAcquire = "share_acquire"
	opShareRelease = "share_release"
)

// shareWaitSlack is added to a share_acquire's MaxWaitMs for its timeout.
const shareWaitSlack = 5 * time.Second

// Minimum encoded sizes, to bound decoded counts by the bytes left.
const (
	minSharePartSize     = 16 + 1 + 1 + 1 // topic id, partition, fetch, no acks
	minShareAckSize      = 3              // first, length, no types
	minShareAnswerSize   = 16 + 1 + 1 + 1 + 1 + 3 + 1 + 1 + 1
	minShareAcquiredSize = 3
)

// shareOps are the share group ops, served beside groupOps.
var shareOps = map[string]handler{
	opShareAcquire: (*Server).handleShareAcquire,
	opShareRelease: (*Server).handleShareRelease,
}

func encShareAcquireReq(e *encoder, r *coordapi.ShareAcquireRequest) {
	e.str(r.Group)
	e.str(r.Member)
	e.varint(int64(r.Via))
	e.bool(r.Renew)
	e.varint(int64(r.MaxRecords))
	e.varint(int64(r.BatchSize))
	e.varint(int64(r.Mode))
	e.varint(int64(r.MaxBytes))
	e.varint(int64(r.MaxWaitMs))
	e.uvarint(uint64(len(r.Partitions)))
	for i := range r.Partitions {
		p := &r.Partitions[i]
		e.id(p.Topic)
		e.varint(int64(p.Partition))
		e.bool(p.Fetch)
		e.uvarint(uint64(len(p.Acks)))
		for _, a := range p.Acks {
			e.varint(a.First)
			e.varint(a.Last - a.First)
			e.uvarint(uint64(len(a.Types)))
			for _, t := range a.Types {
				e.varint(int64(t))
			}
		}
	}
}

func decShareAcquireReq(d *decoder) coordapi.ShareAcquireRequest {
	r := coordapi.ShareAcquireRequest{Group: d.str(), Member: d.str(), Via: d.int32(), Renew: d.bool(),
		MaxRecords: d.int32(), BatchSize: d.int32(), Mode: d.int8(), MaxBytes: d.int32(), MaxWaitMs: d.int32()}
	n := d.count(minSharePartSize)
	if n > 0 {
		r.Partitions = make([]coordapi.ShareAcquirePartition, n)
	}
	for i := range r.Partitions {
		p := &r.Partitions[i]
		p.Topic, p.Partition, p.Fetch = d.id(), d.int32(), d.bool()
		if na := d.count(minShareAckSize); na > 0 {
			p.Acks = make([]coordapi.ShareAckBatch, na)
			for j := range p.Acks {
				a := &p.Acks[j]
				a.First = d.varint()
				a.Last = a.First + d.varint()
				if nt := d.count(1); nt > 0 {
					a.Types = make([]int8, nt)
					for k := range a.Types {
						a.Types[k] = d.int8()
					}
				}
			}
		}
	}
	return r
}

func encShareAcquireResp(e *encoder, r coordapi.ShareAcquireResponse) {
	e.varint(int64(r.LockDurationMs))
	// The object table first, so the decoder can check indexes as it goes.
	index := map[objectRef]int{}
	var refs []objectRef
	for i := range r.Partitions {
		for _, b := range r.Partitions[i].Batches {
			ref := objectRef{b.ObjectKey, b.ObjectSize}
			if _, ok := index[ref]; !ok {
				index[ref] = len(refs)
				refs = append(refs, ref)
			}
		}
	}
	e.uvarint(uint64(len(refs)))
	for _, ref := range refs {
		e.str(ref.key)
		e.varint(ref.size)
	}
	e.uvarint(uint64(len(r.Partitions)))
	for i := range r.Partitions {
		p := &r.Partitions[i]
		e.id(p.Topic)
		e.varint(int64(p.Partition))
		e.varint(int64(p.ErrorCode))
		e.varint(int64(p.AckErrorCode))
		e.str(p.AckErrorMessage)
		encPartitionState(e, p.PartitionState)
		e.uvarint(uint64(len(p.Acquired)))
		for _, a := range p.Acquired {
			e.varint(a.First)
			e.varint(a.Last - a.First)
			e.varint(int64(a.DeliveryCount))
		}
		e.uvarint(uint64(len(p.Batches)))
		for j := range p.Batches {
			b := &p.Batches[j]
			e.uvarint(uint64(index[objectRef{b.ObjectKey, b.ObjectSize}]))
			encBatchPlace(e, b)
		}
		encAborted(e, p.Aborted)
	}
}

func decShareAcquireResp(d *decoder) coordapi.ShareAcquireResponse {
	r := coordapi.ShareAcquireResponse{LockDurationMs: d.int32()}
	refs := make([]objectRef, d.count(minMultiObjectSize))
	for i := range refs {
		refs[i] = objectRef{d.str(), d.varint()}
	}
	n := d.count(minShareAnswerSize)
	if n > 0 {
		r.Partitions = make([]coordapi.ShareAcquired, n)
	}
	for i := range r.Partitions {
		p := &r.Partitions[i]
		p.Topic, p.Partition = d.id(), d.int32()
		p.ErrorCode, p.AckErrorCode, p.AckErrorMessage = d.int16(), d.int16(), d.str()
		p.PartitionState = decPartitionState(d)
		if na := d.count(minShareAcquiredSize); na > 0 {
			p.Acquired = make([]coordapi.ShareAcquiredRecords, na)
			for j := range p.Acquired {
				a := &p.Acquired[j]
				a.First = d.varint()
				a.Last = a.First + d.varint()
				a.DeliveryCount = d.int16()
			}
		}
		if nb := d.count(minMultiBatchSize); nb > 0 {
			p.Batches = make([]coordapi.BatchCoord, nb)
			for j := range p.Batches {
				k := d.uvarint()
				if k >= uint64(len(refs)) {
					d.fail("partition %d batch %d names object %d of %d", i, j, k, len(refs))
					return r
				}
				p.Batches[j].ObjectKey, p.Batches[j].ObjectSize = refs[k].key, refs[k].size
				decBatchPlace(d, &p.Batches[j])
			}
		}
		p.Aborted = decAborted(d)
		if d.err != nil {
			return r
		}
	}
	return r
}

func encShareReleaseReq(e *encoder, r *coordapi.ShareReleaseRequest) {
	e.str(r.Group)
	e.str(r.Member)
	e.varint(int64(r.Via))
	e.bool(r.Partitions == nil)
	e.uvarint(uint64(len(r.Partitions)))
	for _, p := range r.Partitions {
		e.id(p.TopicID)
		e.varint(int64(p.Partition))
	}
}

func decShareReleaseReq(d *decoder) coordapi.ShareReleaseRequest {
	r := coordapi.ShareReleaseRequest{Group: d.str(), Member: d.str(), Via: d.int32()}
	all := d.bool()
	n := d.count(17)
	if !all {
		r.Partitions = make([]coordapi.TopicPartition, n)
	}
	for i := range n {
		p := coordapi.TopicPartition{TopicID: d.id(), Partition: d.int32()}
		if !all {
			r.Partitions[i] = p
		}
	}
	return r
}

func (s *Server) handleShareAcquire(ctx context.Context, d *decoder, e *encoder) error {
	req := decShareAcquireReq(d)
	if d.err != nil {
		return &coordapi.KafkaError{Code: kerr.InvalidRequest, Message: d.err.Error()}
	}
	resp, err := s.groups.ShareAcquire(ctx, req)
	if err != nil {
		return err
	}
	encShareAcquireResp(e, resp)
	return nil
}

func (s *Server) handleShareRelease(ctx context.Context, d *decoder, e *encoder) error {
	req := decShareReleaseReq(d)
	if d.err != nil {
		return &coordapi.KafkaError{Code: kerr.InvalidRequest, Message: d.err.Error()}
	}
	return s.groups.ShareRelease(ctx, req)
}

// ShareAcquire serves a ShareFetch or ShareAcknowledge on the cluster's
// group coordinator; see groups.Groups.ShareAcquire. It may be held up to
// req.MaxWaitMs.
func (g *GroupClient) ShareAcquire(ctx context.Context, req coordapi.ShareAcquireRequest) (coordapi.ShareAcquireResponse, error) {
	timeout := time.Duration(max(req.MaxWaitMs, 0))*time.Millisecond + shareWaitSlack
	return callWith(g.c, ctx, opShareAcquire, timeout, func(e *encoder) { encShareAcquireReq(e, &req) }, decShareAcquireResp)
}

// ShareRelease gives back the records a member acquired through one
// broker; see groups.Groups.ShareRelease.
func (g *GroupClient) ShareRelease(ctx context.Context, req coordapi.ShareReleaseRequest) error {
	_, err := call(g.c, ctx, opShareRelease, func(e *encoder) { encShareReleaseReq(e, &req) }, func(*decoder) struct{} { return struct{}{} })
	return err
}

// int8 reads a varint that must fit in an int8.
func (d *decoder) int8() int8 {
	v := d.varint()
	if v < math.MinInt8 || v > math.MaxInt8 {
		d.fail("int8 out of range: %d", v)
		return 0
	}
	return int8(v)
}
