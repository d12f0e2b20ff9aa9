package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/coordapi"
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
}

// maxShareSegmentAsk bounds the bytes of batches taken from a tiered
// segment for one partition's acquired records.
const maxShareSegmentAsk = 64 << 20

// readShared reads every part's batches at once, as Fetch reads planned
// batches: tiered segments become the batches inside them
// (expandSegments), and only the batches holding acquired records are
// read (readPlanned). A partition whose bytes cannot be read answers the
// error (KAFKA_STORAGE_ERROR, retriable); its records stay acquired until
// their lock expires, then come back.
func (b *Broker) readShared(ctx context.Context, parts []*shareRead) {
	var pfs []*partFetch
	var owners []*shareRead
	for _, p := range parts {
		if len(p.acq.Batches) == 0 || len(p.acq.Acquired) == 0 {
			continue
		}
		sp := kmsg.NewFetchResponseTopicPartition()
		pf := &partFetch{tp: p.tp, offset: p.acq.Acquired[0].First, maxBytes: maxShareSegmentAsk, sp: &sp, ask: maxShareSegmentAsk}
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
	b.readPlanned(ctx, pfs)
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
