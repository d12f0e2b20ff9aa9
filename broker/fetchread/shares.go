package fetchread

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/record"
)

// ShareRead is one partition of a ShareFetch whose acquired records are
// read: the coordinator answered where their batches live, and the bytes
// come through Fetch's read path (the chunk cache or the store). The
// caller sets TopicPartition, Acq and View; ReadShared sets the rest.
type ShareRead struct {
	TopicPartition
	// Acq is the coordinator's answer for the partition: the acquired
	// records and the batches holding them. ReadShared takes out of
	// Acq.Acquired what it does not deliver (see Internal).
	Acq *coordapi.ShareAcquired
	// Records and Code are the outcome: the batches holding the acquired
	// records, patched for the wire, or the read's error code. A Code
	// set before ReadShared (the view could not be resolved) fails the
	// partition without reading.
	Records []byte
	Code    int16
	// View is the view the partition names, nil for a topic: the batches
	// are its base topic's, and only its key's records are sent
	// (filterView).
	View *coordapi.TopicView
	// Internal are the acknowledgements the broker owes the coordinator
	// for this partition: aborted records taken out of Acq.Acquired
	// (coordapi.ShareAckArchiveAborted), or records whose bytes could not
	// be read (coordapi.ShareAckReturnUnread).
	Internal []coordapi.ShareAckBatch
}

// maxShareSegmentAsk bounds the bytes of batches taken from a tiered
// segment for one partition's acquired records.
const maxShareSegmentAsk = 64 << 20

// ReadShared reads every part's batches at once, as Fetch reads planned
// batches: tiered segments become the batches inside them
// (expandSegments), and only the batches holding acquired records are
// read (Read). A partition whose bytes cannot be read answers the
// error (KAFKA_STORAGE_ERROR, retriable), and its records go back to the
// coordinator (ShareAckReturnUnread in Internal). Under read_committed
// (the coordinator answered aborted transactions), the records of aborted
// transactions leave the part's acquired records and are to be archived
// (filterAborted). On a hierarchical view the batches are the base
// topic's, and the other keys' records are cut out of them (filterView):
// the client acknowledges the acquired offsets missing from the batches
// as gaps. It returns the bytes of batches read.
func (rd *Reader) ReadShared(ctx context.Context, parts []*ShareRead) int {
	n := rd.readSharedBytes(ctx, parts)
	for _, p := range parts {
		if len(p.Acq.Acquired) == 0 {
			continue
		}
		if p.Code != 0 {
			for _, a := range p.Acq.Acquired {
				p.Internal = append(p.Internal, coordapi.ShareAckBatch{First: a.First, Last: a.Last, Types: []int8{coordapi.ShareAckReturnUnread}})
			}
			continue
		}
		// Acquired records past the bytes read (a tiered segment's read
		// stops at maxShareSegmentAsk) go back: a client would take them
		// for gaps and acknowledge them, and they would be lost.
		var unread []coordapi.ShareAckBatch
		p.Acq.Acquired, unread = trimUnread(p.Records, p.Acq.Acquired)
		p.Internal = append(p.Internal, unread...)
		switch {
		case len(p.Acq.Acquired) == 0:
			p.Records = nil
			continue
		case len(p.Acq.Aborted) > 0:
			var archive []coordapi.ShareAckBatch
			p.Acq.Acquired, archive = filterAborted(p.Records, p.Acq.Aborted, p.Acq.Acquired)
			p.Internal = append(p.Internal, archive...)
			if len(p.Acq.Acquired) == 0 {
				p.Records = nil // nothing left to deliver
			}
		}
		if p.View != nil && len(p.Records) > 0 {
			p.Records = filterView(p.Records, p.View.Key)
		}
	}
	return n
}

// readSharedBytes reads the batches of ReadShared, and returns their bytes.
func (rd *Reader) readSharedBytes(ctx context.Context, parts []*ShareRead) int {
	var pfs []*Part
	var owners []*ShareRead
	for _, p := range parts {
		if len(p.Acq.Batches) == 0 || len(p.Acq.Acquired) == 0 || p.Code != 0 {
			continue
		}
		sp := kmsg.NewFetchResponseTopicPartition()
		tp := p.TopicPartition
		if p.View != nil {
			tp.Topic = p.View.BaseID // the batches are the base's
		}
		pf := &Part{TopicPartition: tp, Offset: p.Acq.Acquired[0].First, MaxBytes: maxShareSegmentAsk, Resp: &sp, ask: maxShareSegmentAsk}
		pf.found.Batches = p.Acq.Batches
		pfs = append(pfs, pf)
		owners = append(owners, p)
	}
	if len(pfs) == 0 {
		return 0
	}
	rd.expandSegments(ctx, pfs)
	for i, pf := range pfs {
		if pf.code != 0 {
			owners[i].Code = pf.code
			continue
		}
		pf.batches = holdingAcquired(pf.found.Batches, owners[i].Acq.Acquired)
	}
	n, _ := rd.Read(ctx, pfs, nil)
	for i, pf := range pfs {
		o := owners[i]
		if o.Code != 0 {
			continue
		}
		if pf.Resp.ErrorCode != 0 {
			o.Code = pf.Resp.ErrorCode
			continue
		}
		o.Records = pf.Resp.RecordBatches
	}
	return n
}

// holdingAcquired returns the batches that hold some acquired record (both
// ascending).
func holdingAcquired(batches []coordapi.BatchCoord, acquired []coordapi.ShareAcquiredRecords) []coordapi.BatchCoord {
	var out []coordapi.BatchCoord
	j := 0
	for _, bc := range batches {
		for j < len(acquired) && acquired[j].Last < bc.BaseOffset {
			j++
		}
		if j == len(acquired) {
			break
		}
		if acquired[j].First <= bc.LastOffset {
			out = append(out, bc)
		}
	}
	return out
}

// filterAborted takes the records of aborted transactions out of acquired,
// as Kafka's SharePartition.filterAbortedTransactionalAcquiredRecords does
// for a read_committed share group, since share consumers get no aborted
// transactions list and filter nothing. records are the batches read for
// acquired (the broker's bytes, headers only looked at); a batch is
// aborted when it is transactional, not a control batch, and one of
// aborted names its producer, begins at or before the batch's last offset
// and has its abort marker (LastOffset) after it. Control batches stay
// acquired: the client acknowledges their offsets as gaps. It returns
// what stays acquired, and the acquired offsets taken out, to archive
// (coordapi.ShareAckArchiveAborted). Bytes it cannot parse end the look:
// what lies past them stays acquired.
func filterAborted(records []byte, aborted []coordapi.AbortedTxn, acquired []coordapi.ShareAcquiredRecords) (kept []coordapi.ShareAcquiredRecords, archive []coordapi.ShareAckBatch) {
	type span struct{ first, last int64 }
	var drop []span
	for off := 0; off < len(records); {
		h, err := record.ParseHeader(records[off:])
		if err != nil || h.Size() <= 0 {
			break
		}
		off += h.Size()
		if !h.Transactional() || h.Control() {
			continue
		}
		last := h.BaseOffset + int64(h.LastOffsetDelta)
		for _, a := range aborted {
			if a.ProducerID == h.ProducerID && a.FirstOffset <= last && a.LastOffset > last {
				if n := len(drop); n > 0 && drop[n-1].last+1 >= h.BaseOffset {
					drop[n-1].last = max(drop[n-1].last, last)
				} else {
					drop = append(drop, span{h.BaseOffset, last})
				}
				break
			}
		}
	}
	if len(drop) == 0 {
		return acquired, nil
	}
	for _, a := range acquired {
		first := a.First
		for _, d := range drop {
			if d.last < first || d.first > a.Last {
				continue
			}
			if d.first > first {
				kept = append(kept, coordapi.ShareAcquiredRecords{First: first, Last: d.first - 1, DeliveryCount: a.DeliveryCount})
			}
			lo, hi := max(first, d.first), min(a.Last, d.last)
			if n := len(archive); n > 0 && archive[n-1].Last+1 == lo {
				archive[n-1].Last = hi
			} else {
				archive = append(archive, coordapi.ShareAckBatch{First: lo, Last: hi, Types: []int8{coordapi.ShareAckArchiveAborted}})
			}
			first = hi + 1
			if first > a.Last {
				break
			}
		}
		if first <= a.Last {
			kept = append(kept, coordapi.ShareAcquiredRecords{First: first, Last: a.Last, DeliveryCount: a.DeliveryCount})
		}
	}
	return kept, archive
}

// trimUnread splits acquired at the last offset records (whole batches)
// hold: what is past it stays acquired in the coordinator but was not
// read, so it goes back (coordapi.ShareAckReturnUnread, its delivery not
// counted) rather than out to a client, which would take the missing
// offsets for gaps (compacted away) and acknowledge them. Offsets missing
// between batches are left alone: those are the log's own gaps.
func trimUnread(records []byte, acquired []coordapi.ShareAcquiredRecords) (kept []coordapi.ShareAcquiredRecords, unread []coordapi.ShareAckBatch) {
	covered := int64(-1)
	for off := 0; off < len(records); {
		h, err := record.ParseHeader(records[off:])
		if err != nil || h.Size() <= 0 || h.Size() > len(records)-off {
			break
		}
		off += h.Size()
		covered = max(covered, h.BaseOffset+int64(h.LastOffsetDelta))
	}
	if n := len(acquired); n == 0 || acquired[n-1].Last <= covered {
		return acquired, nil
	}
	for _, a := range acquired {
		switch {
		case a.Last <= covered:
			kept = append(kept, a)
		case a.First <= covered:
			kept = append(kept, coordapi.ShareAcquiredRecords{First: a.First, Last: covered, DeliveryCount: a.DeliveryCount})
			unread = append(unread, coordapi.ShareAckBatch{First: covered + 1, Last: a.Last, Types: []int8{coordapi.ShareAckReturnUnread}})
		default:
			unread = append(unread, coordapi.ShareAckBatch{First: a.First, Last: a.Last, Types: []int8{coordapi.ShareAckReturnUnread}})
		}
	}
	return kept, unread
}
