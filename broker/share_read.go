package broker

import (
	"cmp"
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/record"
)

// shareRead is one partition of a ShareFetch whose acquired records are
// read: the coordinator answered where their batches live, and the bytes
// come through Fetch's read path (the chunk cache or the store).
type shareRead struct {
	tp  topicPartition
	acq *coordapi.ShareAcquired
	// records and code are the outcome: the batches holding the acquired
	// records, patched for the wire, or the read's error code.
	records []byte
	code    int16
	// view is the view tp names, nil for a topic: the batches are its
	// base topic's, and only its key's records are sent (filterView).
	view *coordapi.TopicView
	// internal are the acknowledgements the broker owes the coordinator
	// for this partition: aborted records it took out of acq.Acquired
	// (coordapi.ShareAckArchiveAborted), or records whose bytes it could
	// not read (coordapi.ShareAckReturnUnread). sendShareInternalAcks
	// sends them.
	internal []coordapi.ShareAckBatch
}

// maxShareSegmentAsk bounds the bytes of batches taken from a tiered
// segment for one partition's acquired records.
const maxShareSegmentAsk = 64 << 20

// readShared reads every part's batches at once, as Fetch reads planned
// batches: tiered segments become the batches inside them
// (expandSegments), and only the batches holding acquired records are
// read (readPlanned). A partition whose bytes cannot be read answers the
// error (KAFKA_STORAGE_ERROR, retriable), and its records go back to the
// coordinator (ShareAckReturnUnread in internal). Under read_committed
// (the coordinator answered aborted transactions), the records of aborted
// transactions leave the part's acquired records and are to be archived
// (filterAborted). On a hierarchical view the batches are the base
// topic's, and the other keys' records are cut out of them (filterView):
// the client acknowledges the acquired offsets missing from the batches
// as gaps.
func (b *Broker) readShared(ctx context.Context, parts []*shareRead) {
	b.shareViews(ctx, parts)
	b.readSharedBytes(ctx, parts)
	for _, p := range parts {
		if len(p.acq.Acquired) == 0 {
			continue
		}
		if p.code != 0 {
			for _, a := range p.acq.Acquired {
				p.internal = append(p.internal, coordapi.ShareAckBatch{First: a.First, Last: a.Last, Types: []int8{coordapi.ShareAckReturnUnread}})
			}
			continue
		}
		// Acquired records past the bytes read (a tiered segment's read
		// stops at maxShareSegmentAsk) go back: a client would take them
		// for gaps and acknowledge them, and they would be lost.
		var unread []coordapi.ShareAckBatch
		p.acq.Acquired, unread = trimUnread(p.records, p.acq.Acquired)
		p.internal = append(p.internal, unread...)
		switch {
		case len(p.acq.Acquired) == 0:
			p.records = nil
			continue
		case len(p.acq.Aborted) > 0:
			var archive []coordapi.ShareAckBatch
			p.acq.Acquired, archive = filterAborted(p.records, p.acq.Aborted, p.acq.Acquired)
			p.internal = append(p.internal, archive...)
			if len(p.acq.Acquired) == 0 {
				p.records = nil // nothing left to deliver
			}
		}
		if p.view != nil && len(p.records) > 0 {
			p.records = filterView(p.records, p.view.Key)
		}
	}
}

// shareViews resolves the parts on hierarchical views (their ids are
// derived, coordapi.IsViewTopicID): a view that cannot be resolved fails
// its part with the lookup's error (its records go back unread).
func (b *Broker) shareViews(ctx context.Context, parts []*shareRead) {
	for _, p := range parts {
		if !coordapi.IsViewTopicID(p.tp.id) || len(p.acq.Acquired) == 0 {
			continue
		}
		t, err := b.topics.byID(ctx, p.tp.id)
		switch {
		case err != nil:
			p.code = errorCode(err)
		case t.View != nil:
			p.view = t.View
		}
	}
}

// readSharedBytes reads the batches of readShared.
func (b *Broker) readSharedBytes(ctx context.Context, parts []*shareRead) {
	var pfs []*partFetch
	var owners []*shareRead
	for _, p := range parts {
		if len(p.acq.Batches) == 0 || len(p.acq.Acquired) == 0 || p.code != 0 {
			continue
		}
		sp := kmsg.NewFetchResponseTopicPartition()
		tp := p.tp
		if p.view != nil {
			tp.id = p.view.BaseID // the batches are the base's
		}
		pf := &partFetch{tp: tp, offset: p.acq.Acquired[0].First, maxBytes: maxShareSegmentAsk, sp: &sp, ask: maxShareSegmentAsk}
		pf.found.Batches = p.acq.Batches
		pfs = append(pfs, pf)
		owners = append(owners, p)
	}
	if len(pfs) == 0 {
		return
	}
	b.expandSegments(ctx, pfs)
	for i, pf := range pfs {
		if pf.code != 0 {
			owners[i].code = pf.code
			continue
		}
		pf.batches = holdingAcquired(pf.found.Batches, owners[i].acq.Acquired)
	}
	b.readPlanned(ctx, pfs, nil)
	for i, pf := range pfs {
		o := owners[i]
		if o.code != 0 {
			continue
		}
		if pf.sp.ErrorCode != 0 {
			o.code = pf.sp.ErrorCode
			continue
		}
		o.records = pf.sp.RecordBatches
	}
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

// sendShareInternalAcks sends the internal acknowledgements of parts to
// the coordinator, off the answer path, in one ShareAcquire of the
// session's member without fetch. Nothing is lost if it fails: the
// records stay acquired until their lock expires, then come back, and are
// filtered out again. A member's next acquisition here waits for a return
// of unread records (as for a release), so that it never gives back what
// that acquisition takes.
func (b *Broker) sendShareInternalAcks(group, member string, parts []*shareRead) {
	req := coordapi.ShareAcquireRequest{Group: group, Member: member, Via: b.opts.NodeID}
	returns := false
	for _, p := range parts {
		if len(p.internal) == 0 {
			continue
		}
		// Acknowledgement batches go in offset order (the coordinator
		// refuses overlapping or descending ones): unread records past
		// the bytes read were noted before aborted ones below them.
		acks := slices.SortedFunc(slices.Values(p.internal), func(x, y coordapi.ShareAckBatch) int { return cmp.Compare(x.First, y.First) })
		req.Partitions = append(req.Partitions, coordapi.ShareAcquirePartition{Topic: p.tp.id, Partition: p.tp.partition, Acks: acks})
		for _, a := range acks {
			returns = returns || a.Types[0] == coordapi.ShareAckReturnUnread
		}
	}
	if len(req.Partitions) == 0 || b.groups == nil {
		return
	}
	done := func() {}
	if returns {
		done = b.shares.startRelease(shareSessionKey{group, member})
	}
	b.shareReleases.Add(1)
	go func() {
		defer b.shareReleases.Done()
		defer done()
		ctx, cancel := context.WithTimeout(context.Background(), shareReleaseTimeout)
		defer cancel()
		if _, err := b.groups.ShareAcquire(ctx, req); err != nil {
			b.log.Warn("archive aborted or return unread share records; they come back when their lock expires",
				"group", group, "member_id", member, "err", err)
		}
	}()
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
