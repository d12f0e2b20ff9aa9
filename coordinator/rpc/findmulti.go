package rpc

import (
	"github.com/floe-io/floe/coordapi"
)

// find_batches_multi asks for many partitions' batch coordinates in one
// round trip: a Fetch of many partitions that the tail cache cannot answer.
// Partitions of one fetch mostly share their topic, and their batches
// mostly share the same few WAL objects (every object holds many
// partitions), so topic ids and object keys go in tables:
//
//	request   n topic ids × (id(16)),
//	          n requests × (topic index, partition, offset, max bytes)
//	reply     n objects × (key (str), size),
//	          n results × (error code, log start offset, high watermark,
//	            n batches × (object index, byte offset, byte length,
//	              base offset, last offset - base offset, max timestamp,
//	              flags))
//
// The results answer the first requests, in order: all of them, or fewer
// when the answer would not fit in one NATS message. The server then trims
// the last result it answers to the batches that fit (at least one: it
// never makes a partition with data look empty) and leaves the rest out;
// the client asks again for the requests left. A result's error code is
// its partition's Kafka-level failure (0: none); with OFFSET_OUT_OF_RANGE
// the offsets are the partition's.

// Minimum encoded sizes, to bound decoded counts by the bytes left.
const (
	minMultiReqSize    = 5 // topic index, partition, offset, max bytes, read committed
	minMultiObjectSize = 2 // empty key, size
	minMultiResultSize = 6 // error code, log start, high watermark, LSO delta, no batches, no aborted
	minMultiBatchSize  = 7 // object index, five numbers, flags
)

// maxMultiReqSize bounds one request's share of an encoded
// find_batches_multi request: a new topic id, four varints and a bool.
const maxMultiReqSize = 16 + 10 + 5 + 10 + 5 + 1

func encFindBatchesMultiReq(e *encoder, reqs []coordapi.FindBatchesRequest) {
	topics := map[coordapi.TopicID]uint64{}
	var order []coordapi.TopicID
	for i := range reqs {
		if _, ok := topics[reqs[i].TopicID]; !ok {
			topics[reqs[i].TopicID] = uint64(len(order))
			order = append(order, reqs[i].TopicID)
		}
	}
	e.uvarint(uint64(len(order)))
	for _, id := range order {
		e.id(id)
	}
	e.uvarint(uint64(len(reqs)))
	for i := range reqs {
		r := &reqs[i]
		e.uvarint(topics[r.TopicID])
		e.varint(int64(r.Partition))
		e.varint(r.Offset)
		e.varint(int64(r.MaxBytes))
		e.bool(r.ReadCommitted)
	}
}

func decFindBatchesMultiReq(d *decoder) []coordapi.FindBatchesRequest {
	ids := make([]coordapi.TopicID, d.count(16))
	for i := range ids {
		ids[i] = d.id()
	}
	n := d.count(minMultiReqSize)
	if n == 0 {
		return nil
	}
	reqs := make([]coordapi.FindBatchesRequest, n)
	for i := range reqs {
		j := d.uvarint()
		if j >= uint64(len(ids)) {
			d.fail("request %d names topic %d of %d", i, j, len(ids))
			return nil
		}
		reqs[i] = coordapi.FindBatchesRequest{TopicID: ids[j], Partition: d.int32(), Offset: d.varint(), MaxBytes: d.int32(), ReadCommitted: d.bool()}
	}
	return reqs
}

// objectRef is an entry of a reply's object table.
type objectRef struct {
	key  string
	size int64
}

// multiReplyEncoder builds a find_batches_multi reply one result at a time:
// the object table and the results are kept apart until finish joins
// them, so that the server can check the size as it goes and take back a
// result that does not fit.
type multiReplyEncoder struct {
	objects encoder
	refs    []objectRef
	index   map[objectRef]int
	results encoder
	n       int
}

// multiMark is a multiReplyEncoder's state, to roll back to.
type multiMark struct{ objects, refs, results, n int }

func (m *multiReplyEncoder) mark() multiMark {
	return multiMark{len(m.objects.b), len(m.refs), len(m.results.b), m.n}
}

// rollback forgets what was added since mk.
func (m *multiReplyEncoder) rollback(mk multiMark) {
	for _, ref := range m.refs[mk.refs:] {
		delete(m.index, ref)
	}
	m.objects.b, m.refs, m.results.b, m.n = m.objects.b[:mk.objects], m.refs[:mk.refs], m.results.b[:mk.results], mk.n
}

// size bounds the encoded reply body: what is encoded and its two counts.
func (m *multiReplyEncoder) size() int { return len(m.objects.b) + len(m.results.b) + 20 }

// add appends r with its first nb batches.
func (m *multiReplyEncoder) add(r *coordapi.FindBatchesResult, nb int) {
	if m.index == nil {
		m.index = map[objectRef]int{}
	}
	e := &m.results
	e.varint(int64(r.ErrorCode))
	encPartitionState(e, r.PartitionState)
	e.uvarint(uint64(nb))
	for _, b := range r.Batches[:nb] {
		ref := objectRef{b.ObjectKey, b.ObjectSize}
		j, ok := m.index[ref]
		if !ok {
			j = len(m.refs)
			m.index[ref] = j
			m.refs = append(m.refs, ref)
			m.objects.str(ref.key)
			m.objects.varint(ref.size)
		}
		e.uvarint(uint64(j))
		encBatchPlace(e, &b)
	}
	encAborted(e, r.Aborted)
	m.n++
}

// fit adds r, or as much of it as keeps the reply within limit bytes: all
// its batches, else as many as fit but at least one. It returns false,
// adding nothing, when not even that fits, and whether r went in whole.
func (m *multiReplyEncoder) fit(r *coordapi.FindBatchesResult, limit int) (added, whole bool) {
	mk := m.mark()
	m.add(r, len(r.Batches))
	if m.size() <= limit {
		return true, true
	}
	m.rollback(mk)
	// The most batches that fit, by bisection over [1, len-1].
	lo, hi := 0, len(r.Batches)-1
	for lo < hi {
		mid := (lo + hi + 1) / 2
		m.add(r, mid)
		ok := m.size() <= limit
		m.rollback(mk)
		if ok {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	if lo == 0 {
		return false, false
	}
	m.add(r, lo)
	return true, false
}

// finish writes the reply body to e.
func (m *multiReplyEncoder) finish(e *encoder) {
	e.uvarint(uint64(len(m.refs)))
	e.b = append(e.b, m.objects.b...)
	e.uvarint(uint64(m.n))
	e.b = append(e.b, m.results.b...)
}

// encFindBatchesMultiResp writes every result, whatever its size.
func encFindBatchesMultiResp(e *encoder, rs []coordapi.FindBatchesResult) {
	var m multiReplyEncoder
	for i := range rs {
		m.add(&rs[i], len(rs[i].Batches))
	}
	m.finish(e)
}

func decFindBatchesMultiResp(d *decoder) []coordapi.FindBatchesResult {
	refs := make([]objectRef, d.count(minMultiObjectSize))
	for i := range refs {
		refs[i] = objectRef{d.str(), d.varint()}
	}
	n := d.count(minMultiResultSize)
	if n == 0 {
		return nil
	}
	out := make([]coordapi.FindBatchesResult, n)
	for i := range out {
		r := &out[i]
		r.ErrorCode = d.int16()
		r.PartitionState = decPartitionState(d)
		if nb := d.count(minMultiBatchSize); nb > 0 {
			r.Batches = make([]coordapi.BatchCoord, nb)
			for k := range r.Batches {
				j := d.uvarint()
				if j >= uint64(len(refs)) {
					d.fail("result %d batch %d names object %d of %d", i, k, j, len(refs))
					return nil
				}
				b := coordapi.BatchCoord{ObjectKey: refs[j].key, ObjectSize: refs[j].size}
				decBatchPlace(d, &b)
				r.Batches[k] = b
			}
		}
		r.Aborted = decAborted(d)
	}
	return out
}
