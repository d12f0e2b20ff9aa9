package fetchread

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/coordapi"
)

// Plan finds the coordinates of every part and plans what each reads:
// parts are in fill order, and budget is the response's max bytes. It
// fills in every part's offsets or error code in Resp, and reports
// whether some part failed. Read then reads what it planned. Planning
// takes these steps, so that a cold fetch of many partitions pays about
// one coordinator round trip and one object-store read rather than the sum
// of theirs:
//
//  1. coordinates: from the tail cache where it can answer, else for all
//     the other partitions in one FindBatchesMulti (one FindBatches each,
//     concurrently, from a coordinator too old for it), each asked for as
//     much as it could get (its max bytes, within the budget); a view's
//     from the posting index (views.go); a tiered segment answered for a
//     partition becomes the batches inside it (expandSegments, all
//     segments at once);
//  2. plan: in fill order, each partition keeps the batches that fit what
//     the budget has left, as Kafka fills a response: the first partition
//     with data always gets its first batch whole, a partition past the
//     spent budget gets none (but its offsets, or its error).
func (rd *Reader) Plan(ctx context.Context, parts []*Part, budget int) (failed bool) {
	rd.findCoordinates(ctx, parts, budget)
	rd.resolveKeySegments(ctx, parts)
	rd.expandSegments(ctx, parts)
	return planFetch(parts, budget)
}

// Offsets is Plan without reading: it finds the coordinates of every part
// (as Plan does) and sets only its offsets, or its error, in Resp. It
// reports whether some part failed.
func (rd *Reader) Offsets(ctx context.Context, parts []*Part, budget int) (failed bool) {
	rd.findCoordinates(ctx, parts, budget)
	for _, p := range parts {
		failed = setPartitionState(p) || failed
	}
	return failed
}

// planFetch gives each part, in fill order, the batches the budget lets it
// read, as the sequential fill would: up to its max bytes and what the
// budget has left, the first batch whole for the first partition with
// data (even past both limits), none once the budget is spent. It fills in
// every part's offsets or error code, and reports whether some part
// failed.
func planFetch(parts []*Part, budget int) (failed bool) {
	total := 0
	for _, p := range parts {
		if setPartitionState(p) {
			failed = true
			continue
		}
		limit := min(p.MaxBytes, budget-total)
		if total == 0 {
			limit = max(limit, 1) // the first batch always goes out whole
		}
		if limit <= 0 {
			continue
		}
		size := 0
		for i, bc := range p.found.Batches {
			if i > 0 && size+int(bc.ByteLength) > limit {
				break
			}
			if p.ReadCommitted && bc.BaseOffset >= p.found.LastStableOffset {
				break // a segment's batches may reach past the LSO
			}
			size += int(bc.ByteLength)
			p.batches = p.found.Batches[:i+1]
		}
		total += size
		if p.ReadCommitted {
			p.Resp.AbortedTransactions = abortedIn(p.found.Aborted, p.batches)
		}
	}
	return failed
}

// abortedIn lists the aborted transactions whose records may be among
// batches (their first offset at or below the last batch's last offset),
// as Fetch answers read_committed consumers; never null.
func abortedIn(aborted []coordapi.AbortedTxn, batches []coordapi.BatchCoord) []kmsg.FetchResponseTopicPartitionAbortedTransaction {
	out := []kmsg.FetchResponseTopicPartitionAbortedTransaction{}
	if len(batches) == 0 {
		return out
	}
	last := batches[len(batches)-1].LastOffset
	for _, a := range aborted {
		if a.FirstOffset <= last {
			at := kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
			at.ProducerID, at.FirstOffset = a.ProducerID, a.FirstOffset
			out = append(out, at)
		}
	}
	return out
}

// setPartitionState sets p's answer from its coordinates: its offsets, or
// its error (with the offsets for OFFSET_OUT_OF_RANGE). It reports whether
// p failed.
func setPartitionState(p *Part) (failed bool) {
	sp := p.Resp
	if p.code != 0 {
		sp.ErrorCode = p.code
		if p.code == kerr.OffsetOutOfRange.Code && p.found.HighWatermark >= 0 {
			sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = p.found.HighWatermark, lastStable(p.found.PartitionState), p.found.LogStartOffset
		}
		return true
	}
	sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = p.found.HighWatermark, lastStable(p.found.PartitionState), p.found.LogStartOffset
	return false
}

// lastStable is a partition's last stable offset as Fetch answers it: the
// high watermark when the state has none that fits (unknown, -1).
func lastStable(st coordapi.PartitionState) int64 {
	if st.LastStableOffset < 0 || st.LastStableOffset > st.HighWatermark {
		return st.HighWatermark
	}
	return st.LastStableOffset
}
