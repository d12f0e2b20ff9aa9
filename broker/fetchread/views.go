package fetchread

import (
	"bytes"
	"context"
	"errors"
	"math"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/record"
	"github.com/floe-io/floe/tiered"
)

// A view's fetch reads only the batches holding its key: the coordinator's
// posting index names them (FindKeyBatches), each resolved to where it lives
// now, and the fetch reads just their byte ranges, then filters them to the
// key (filterView). The steps follow Plan and Read:
//
//	findKeyBatches     FindKeyBatches per view partition (not the tail
//	                   cache: it holds every key's batches); a topic whose
//	                   postings are not ready, or a coordinator without the
//	                   call, falls back to the base partition's batches
//	resolveKeySegments a posting in a tiered segment becomes the batch
//	                   inside it (the segment's index, then exact reads of
//	                   the headers), never the whole segment
//	planFetch          as for any partition
//	Read               exact ranged GETs for ranges small against a cache
//	                   chunk (directReadBelow) when the key's batches are
//	                   sparse (sparseParts), else cache chunks; then
//	                   filterView, then a bare header up to what the
//	                   answer covers (viewTail)
//
// The bare header moves the consumer's offset past offsets that hold no
// record of the key, so that a client reading to the end (kcat -e) gets
// there: Kafka clients skip a batch with no records, taking its last offset
// as read.

// directReadBelow is the fraction of a chunk under which a view's range is
// read directly: a range of a quarter chunk or more is worth its chunk.
const directReadBelow = 4

// findKeyBatches asks the coordinator for the batches of each view part
// holding its key, concurrently, and returns the parts it could not answer
// from postings (not ready, or a coordinator without FindKeyBatches), which
// read the base partition instead.
func (rd *Reader) findKeyBatches(ctx context.Context, views []*Part) (fallback []*Part) {
	if len(views) == 0 {
		return nil
	}
	if rd.findKeyAt.Load() > rd.nowNano() {
		return views
	}
	answered := make([]bool, len(views))
	parallel(len(views), rd.opts.Concurrency, func(i int) {
		p := views[i]
		resp, err := rd.coord.FindKeyBatches(ctx, coordapi.FindKeyBatchesRequest{
			TopicID: p.Topic, Partition: p.Partition, Key: p.ViewKey, Offset: p.Offset, MaxBytes: p.ask, ReadCommitted: p.ReadCommitted})
		switch {
		case errors.Is(err, errors.ErrUnsupported):
			rd.findKeyAt.Store(rd.nowNano() + int64(findMultiRetry))
			return
		case err != nil:
			// As findBatches answers: OFFSET_OUT_OF_RANGE with the
			// partition's offsets (an error reply carries none), else -1.
			p.code = coordapi.ErrorCode(err)
			p.found.PartitionState = coordapi.PartitionState{LogStartOffset: -1, HighWatermark: -1, LastStableOffset: -1}
			if errors.Is(err, kerr.OffsetOutOfRange) {
				if st, serr := rd.coord.PartitionState(ctx, p.Topic, p.Partition); serr == nil {
					p.found.PartitionState = st
				}
			}
		case !resp.Ready:
			return
		default:
			p.keyBatches, p.viewThrough = resp.Batches, resp.Through
			p.found = coordapi.FindBatchesResponse{PartitionState: resp.PartitionState, Aborted: resp.Aborted}
		}
		p.posted = true
		answered[i] = true
	})
	for i, p := range views {
		if !answered[i] {
			fallback = append(fallback, p)
		}
	}
	return fallback
}

// resolveKeySegments turns each posted part's key batches into batch
// coordinates: a WAL batch as it is, a batch in a tiered segment found
// through the segment's index (rd.viewSegments, which reads headers with
// exact ranges). A posting whose batch is no longer in its segment
// (compaction rewrote it away) is skipped. A segment that cannot be read
// fails its partition as a failed read does.
func (rd *Reader) resolveKeySegments(ctx context.Context, parts []*Part) {
	var posted []*Part
	for _, p := range parts {
		if p.posted && p.code == 0 {
			posted = append(posted, p)
		}
	}
	parallel(len(posted), rd.opts.Concurrency, func(i int) {
		p := posted[i]
		batches := make([]coordapi.BatchCoord, 0, len(p.keyBatches))
		for _, kb := range p.keyBatches {
			if !kb.Coord.Segment {
				batches = append(batches, kb.Coord)
				continue
			}
			if rd.viewSegments == nil {
				p.code = coordapi.ErrorCode(errNoSegmentReader)
				return
			}
			found, err := rd.viewSegments.Batches(ctx, kb.Coord, max(kb.BaseOffset, p.Offset), 1)
			if err != nil {
				rd.logSegmentError(ctx, "view fetch", err)
				p.code = coordapi.ErrorCode(err)
				return
			}
			if bc := found[0]; bc.BaseOffset <= kb.LastOffset && bc.LastOffset >= kb.BaseOffset {
				batches = append(batches, bc)
			}
		}
		p.found.Batches = batches
	})
}

// viewTail returns the bare header that ends a posted part's answer: from
// after the last batch sent (or the fetch offset) up to what the postings
// covered, when that is further. nil when there is nothing to cover, or
// when the plan did not send every batch found (the next fetch goes on from
// the last one sent).
func viewTail(p *Part, sent int) []byte {
	if !p.posted || sent < len(p.found.Batches) {
		return nil
	}
	start := p.Offset
	if sent > 0 {
		start = max(start, p.found.Batches[sent-1].LastOffset+1)
	}
	end := min(p.viewThrough, p.found.HighWatermark)
	if end <= start {
		return nil
	}
	last := min(end-1, start+math.MaxInt32)
	return tiered.EmptyBatch(record.Header{
		BaseOffset: start, PartitionLeaderEpoch: LeaderEpoch, LastOffsetDelta: int32(last - start),
		MaxTimestamp: -1, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1,
	})
}

// directRead reports whether a view part's range of length bytes is read
// with an exact GET rather than through cache chunks, and with what: when
// the range is small against a chunk and the part is sparse (see
// sparseParts).
func (rd *Reader) directRead(p *Part, sparse bool, length int) (DirectRangeReader, bool) {
	if !p.posted || !sparse {
		return nil, false
	}
	d, ok := rd.ranges.(DirectRangeReader)
	if !ok || int64(length)*directReadBelow > d.ChunkBytes() {
		return nil, false
	}
	return d, true
}

// sparseParts reports, for each part, whether its key's batches are sparse
// in the objects it reads, so that exact reads pay: unless its byte ranges
// (batches back to back in an object are one range) hold two batches or
// more and denseRangeOf of a chunk on average. A dense part, whose key is
// in most batches (producers batching many keys together), reads through
// cache chunks with their read-ahead, as a topic's own fetch does: an
// exact read a fetch would be slower there and read hardly fewer bytes.
func sparseParts(parts []*Part, reads []rangeRead, chunkBytes int64) []bool {
	ranges := make([]int, len(parts))
	bytes := make([]int64, len(parts))
	for _, r := range reads {
		ranges[r.part]++
		bytes[r.part] += int64(r.length)
	}
	sparse := make([]bool, len(parts))
	for pi, p := range parts {
		n := int64(max(ranges[pi], 1))
		sparse[pi] = 2*ranges[pi] > len(p.batches) || bytes[pi]/n*denseRangeOf < chunkBytes
	}
	return sparse
}

// chunkBytes is the chunk size of the Reader's ranges, 0 when they have no
// exact reads.
func (rd *Reader) chunkBytes() int64 {
	if d, ok := rd.ranges.(DirectRangeReader); ok {
		return d.ChunkBytes()
	}
	return 0
}

// denseRangeOf: a dense part's ranges average at least 1/denseRangeOf of a
// chunk.
const denseRangeOf = 8

// filterView returns the batches of data (whole batches, patched for the
// wire) with only the records whose key is key: a batch whose records all
// match as it is, one with some rebuilt around them (same offsets, producer
// fields and codec, a valid CRC), one with none dropped, but the last batch
// kept as a bare header even then, so that a consumer's next offset moves
// past what it was sent. Control batches stay. A batch that does not parse
// ends the result there (the consumer asks again from its offset).
func filterView(data, key []byte) []byte {
	var out []byte // nil while every batch so far stays as it is
	keep := func(r tiered.RecordInfo) bool { return r.Key != nil && bytes.Equal(r.Key, key) }
	at := 0
	for at < len(data) {
		h, err := record.ParseHeader(data[at:])
		if err != nil || h.Size() > len(data)-at {
			break
		}
		n := h.Size()
		last := at+n == len(data)
		b, _, err := tiered.CompactBatch(data[at:at+n:at+n], tiered.CompactPolicy{
			Keep:        keep,
			Lazy:        true, // a key's batch is usually all its own
			AskKeyless:  true,
			RetainEmpty: func(record.Header) bool { return last },
		})
		if err != nil {
			break
		}
		switch {
		case out == nil && len(b) == n && &b[0] == &data[at]:
			// Unchanged (CompactBatch returned the batch itself): no copy
			// until a batch differs.
		case out == nil:
			out = append(append(make([]byte, 0, len(data)), data[:at]...), b...)
		default:
			out = append(out, b...)
		}
		at += n
	}
	if out == nil {
		return data[:at]
	}
	return out
}
