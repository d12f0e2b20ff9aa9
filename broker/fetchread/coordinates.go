package fetchread

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/floe-io/floe/coordapi"
)

// findMultiRetry is how long a Reader whose coordinator does not know
// FindBatchesMulti asks per partition before trying it again (the
// coordinator may have been upgraded meanwhile).
const findMultiRetry = 30 * time.Second

// minFairAsk is the least findCoordinates asks for a partition that is
// not first in fill order; see fairAsk.
const minFairAsk = 1 << 20

// fairAsk bounds what findCoordinates asks for each partition but the
// first in fill order, so that a fetch of many partitions with large
// partition max bytes does not make the coordinator list many times the
// budget's worth of batches: twice an even share of the budget, at least
// minFairAsk. With Kafka clients' default limits (1 MiB per partition, 50
// MiB per fetch) it never bites.
func fairAsk(budget, partitions int) int { return max(2*budget/partitions, minFairAsk) }

// findCoordinates fills every part's found and code: from the tail cache
// where it answers, else from the coordinator, all the rest in one
// FindBatchesMulti. Each part asks for as much as the plan could give it:
// its max bytes, within the budget (at least 1 byte, for the first
// partition's always-whole first batch), and but for the first, within
// fairAsk. A partition the cap held back returns less than the budget
// would have let it: Kafka's limits are upper bounds, and the rotating
// fill order makes every partition first in turn.
func (rd *Reader) findCoordinates(ctx context.Context, parts []*Part, budget int) {
	var (
		misses, rest, views []*Part
	)
	fair := fairAsk(budget, len(parts))
	for i, p := range parts {
		ask := min(p.MaxBytes, budget)
		if i > 0 {
			ask = min(ask, fair)
		}
		p.ask = int32(max(ask, 1))
		if p.ViewKey != nil {
			views = append(views, p)
		} else {
			rest = append(rest, p)
		}
	}
	// Views ask the posting index; those it cannot answer read the base
	// partition like the rest.
	rest = append(rest, rd.findKeyBatches(ctx, views)...)
	for _, p := range rest {
		find := rd.tails.Find
		if p.ReadCommitted {
			find = rd.tails.FindCommitted // none if the partition has aborted transactions
		}
		if found, ok := find(p.Topic, p.Partition, p.Offset, p.ask); ok {
			p.found = found
			continue
		}
		misses = append(misses, p)
	}
	if len(misses) == 0 {
		return
	}
	if tr := rd.opts.Tracer; tr != nil && trace.SpanFromContext(ctx).IsRecording() {
		var span trace.Span
		ctx, span = tr.Start(ctx, "coordinator.find_batches", trace.WithAttributes(
			attribute.Int("floe.partitions", len(misses)), attribute.Int("floe.tail_hits", len(rest)-len(misses))))
		defer span.End()
	}
	reqs := make([]coordapi.FindBatchesRequest, len(misses))
	for i, p := range misses {
		reqs[i] = coordapi.FindBatchesRequest{TopicID: p.Topic, Partition: p.Partition, Offset: p.Offset, MaxBytes: p.ask, ReadCommitted: p.ReadCommitted}
	}
	var (
		results []coordapi.FindBatchesResult
		err     error
		multi   = len(reqs) > 1 && rd.nowNano() >= rd.findMultiAt.Load()
	)
	if multi {
		results, err = rd.coord.FindBatchesMulti(ctx, reqs)
		if errors.Is(err, errors.ErrUnsupported) {
			rd.findMultiAt.Store(rd.nowNano() + int64(findMultiRetry))
			rd.opts.Logger.Info("the coordinator does not serve batched lookups (too old, or down); fetches ask per partition",
				"retry_in", findMultiRetry, "err", err)
			multi = false
		} else if err == nil && len(results) != len(reqs) {
			err = fmt.Errorf("coordinator answered %d results for %d partitions", len(results), len(reqs))
		}
	}
	switch {
	case !multi:
		// One partition, or a coordinator that predates FindBatchesMulti:
		// FindBatches per partition, concurrently.
		results = make([]coordapi.FindBatchesResult, len(reqs))
		parallel(len(reqs), rd.opts.Concurrency, func(i int) {
			results[i] = rd.findBatches(ctx, reqs[i])
		})
	case err != nil:
		code := coordapi.ErrorCode(err)
		results = make([]coordapi.FindBatchesResult, len(reqs))
		for i := range results {
			results[i].ErrorCode = code
		}
	}
	for i, p := range misses {
		p.found, p.code = results[i].FindBatchesResponse, results[i].ErrorCode
		if p.code == 0 {
			rd.tails.Verify(p.Topic, p.Partition, p.found.PartitionState)
		}
	}
}

// findBatches asks the coordinator for one partition's coordinates, as a
// result of FindBatchesMulti would answer: an OFFSET_OUT_OF_RANGE result
// carries the partition's offsets (-1 when the coordinator does not give
// them).
func (rd *Reader) findBatches(ctx context.Context, req coordapi.FindBatchesRequest) coordapi.FindBatchesResult {
	found, err := rd.coord.FindBatches(ctx, req)
	if err == nil {
		return coordapi.FindBatchesResult{FindBatchesResponse: found}
	}
	r := coordapi.FindBatchesResult{ErrorCode: coordapi.ErrorCode(err)}
	r.HighWatermark, r.LogStartOffset, r.LastStableOffset = -1, -1, -1 // unknown
	if errors.Is(err, kerr.OffsetOutOfRange) {
		if st, serr := rd.coord.PartitionState(ctx, req.TopicID, req.Partition); serr == nil {
			r.PartitionState = st
		}
	}
	return r
}

// expandSegments replaces each part's segment coordinate (the coordinator
// answers one alone for an offset in the partition's tiered part) with the
// batches inside the segment from the part's offset, within what it asked
// for, as FindBatches answers batches; all segments at once, up to
// Options.Concurrency. A segment that cannot be read fails its
// partition as a failed read does (KAFKA_STORAGE_ERROR, retriable).
func (rd *Reader) expandSegments(ctx context.Context, parts []*Part) {
	var segs []*Part
	for _, p := range parts {
		if !p.posted && p.code == 0 && len(p.found.Batches) > 0 && p.found.Batches[0].Segment {
			segs = append(segs, p)
		}
	}
	if len(segs) == 0 {
		return // the common case: no closure to allocate
	}
	parallel(len(segs), rd.opts.Concurrency, func(i int) {
		p := segs[i]
		batches, err := rd.segmentBatches(ctx, p.found.Batches[0], p.Offset, p.ask)
		if err != nil {
			rd.logSegmentError(ctx, "fetch", err)
			p.code, p.found.Batches = coordapi.ErrorCode(err), nil
			return
		}
		p.found.Batches = batches
	})
}
