package broker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/objectstore"
	"github.com/floe-io/floe/record"
)

// Fetch: v4-v13. v12+ flexible; v13 names topics by id. Sessionless: every
// answer has session id 0 and is a full response, which clients accept.
// With too little data and MaxWaitMillis > 0 the fetch waits for a commit
// notice on one of its partitions, or the deadline.
func init() { register(kmsg.Fetch, 4, 13, (*Broker).handleFetch) }

// maxFetchWait bounds how long a fetch may park, whatever the client asks.
const maxFetchWait = 30 * time.Second

func (b *Broker) handleFetch(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.FetchRequest)
	wait := min(time.Duration(req.MaxWaitMillis)*time.Millisecond, maxFetchWait)
	deadline := time.Now().Add(wait)
	var (
		wake       chan struct{}
		unregister func()
	)
	defer func() {
		if unregister != nil {
			unregister()
		}
	}()
	var rotate int
	if r.conn != nil {
		rotate = int(r.conn.fetches.Add(1))
		if req.Version >= 11 && req.Rack != "" {
			r.conn.zone.set(req.Rack) // client.rack (KIP-392)
		}
	}
	zone := r.clientZone()
	if local, ok := b.redirectZone(req, zone); ok {
		// The consumer moves to its zone's broker: answer the offsets and
		// the preferred replicas, and read no record bytes.
		resp, _, _, _ := b.fetchOnce(ctx, r, req, rotate, true)
		b.setPreferredReplicas(ctx, req, resp, local)
		return resp, nil
	}
	for {
		// An answer not sent (the loop fetches again) gives its buffers
		// back; the write loop gives back those of the one sent.
		b.releaseBufs(r)
		resp, n, tps, stop := b.fetchOnce(ctx, r, req, rotate, false)
		if stop || n >= int(req.MinBytes) || n > 0 && req.MinBytes <= 0 || wait <= 0 || !time.Now().Before(deadline) {
			b.zoneMetrics.add(ctx, false, zone, int64(n))
			return resp, nil
		}
		if wake == nil {
			// Register before fetching again so that no commit slips
			// between the read and the wait.
			wake = make(chan struct{}, 1)
			unregister = b.waiters.register(tps, wake)
			continue
		}
		var draining <-chan struct{}
		if r.conn != nil {
			draining = r.conn.draining
		}
		timer := time.NewTimer(time.Until(deadline))
		select {
		case <-wake:
			timer.Stop()
		case <-timer.C:
		case <-draining:
			timer.Stop()
			return resp, nil // the broker is stopping: answer what there is
		case <-ctx.Done():
			timer.Stop()
			b.releaseBufs(r)
			return nil, ctx.Err()
		}
	}
}

// releaseBufs gives r's answer buffers back to the pool, for an answer that
// will not be sent.
func (b *Broker) releaseBufs(r *request) {
	for _, buf := range r.bufs {
		b.bufs.Put(buf)
	}
	r.bufs = nil
}

// fetchTopic returns the topic a Fetch names: by id from v13 on, else by
// name.
func (b *Broker) fetchTopic(ctx context.Context, version int16, name string, id [16]byte) (coordapi.Topic, error) {
	if version >= 13 {
		return b.topics.byID(ctx, coordapi.TopicID(id))
	}
	return b.topics.byName(ctx, name)
}

// fetchOnce reads what is there now. It returns the response, the bytes of
// records in it, the partitions asked for, and whether the fetch must answer
// at once (an error on some partition).
//
// The byte budget is shared fairly: partitions are filled starting at a
// position that rotates from one fetch of the connection to the next, so
// that a busy partition early in the request cannot starve the later ones;
// the response keeps request order. Reading takes three steps, so that a
// cold fetch of many partitions pays about one coordinator round trip and
// one object-store read rather than the sum of theirs:
//
//  1. coordinates: from the tail cache where it can answer, else for all
//     the other partitions in one FindBatchesMulti (one FindBatches each,
//     concurrently, from a coordinator too old for it), each asked for as
//     much as it could get (its max bytes, within the budget); a tiered
//     segment answered for a partition becomes the batches inside it
//     (expandSegments, all segments at once);
//  2. plan: in fill order, each partition keeps the batches that fit what
//     the budget has left, as Kafka fills a response: the first partition
//     with data always gets its first batch whole, a partition past the
//     spent budget gets none (but its offsets, or its error);
//  3. read: every planned byte range at once, up to Options.FetchConcurrency
//     reads in flight, then patch each batch for the wire.
//
// With offsetsOnly it stops after the coordinates: each partition gets its
// offsets or its error, and no record bytes are read. A topic r's principal
// may not READ answers TOPIC_AUTHORIZATION_FAILED (by name, whether it
// exists or not, as Kafka; by id, once the id is known).
func (b *Broker) fetchOnce(ctx context.Context, r *request, req *kmsg.FetchRequest, rotate int, offsetsOnly bool) (*kmsg.FetchResponse, int, []topicPartition, bool) {
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	budget := int(req.MaxBytes)
	if budget <= 0 {
		budget = 50 << 20
	}
	var (
		tps  []topicPartition
		todo []*partFetch
		stop bool
	)
	resp.Topics = make([]kmsg.FetchResponseTopic, len(req.Topics))
	for ti := range req.Topics {
		rt := &req.Topics[ti]
		st := &resp.Topics[ti]
		*st = kmsg.NewFetchResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		t, terr := b.fetchTopic(ctx, req.Version, rt.Topic, rt.TopicID)
		if name := rt.Topic; req.Version < 13 || terr == nil {
			if req.Version >= 13 {
				name = t.Name
			}
			if !b.authorizedTopic(r, kmsg.ACLOperationRead, name) {
				terr = kerr.TopicAuthorizationFailed
			}
		}
		st.Partitions = make([]kmsg.FetchResponseTopicPartition, len(rt.Partitions))
		for pi := range rt.Partitions {
			rp := &rt.Partitions[pi]
			sp := &st.Partitions[pi]
			*sp = kmsg.NewFetchResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = -1, -1, -1
			// Records is never null, whatever the partition's outcome:
			// librdkafka fails the whole response on a null record set
			// (MessageSetSize -1) and backs off; Kafka sends an empty one.
			sp.RecordBatches = []byte{}
			if req.IsolationLevel == 1 {
				// read_committed: the aborted transactions of the range
				// (planFetch); Kafka sends null only under
				// read_uncommitted.
				sp.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{}
			}
			switch {
			case terr != nil:
				sp.ErrorCode = errorCode(terr)
				if req.Version >= 13 && errors.Is(terr, kerr.UnknownTopicOrPartition) {
					sp.ErrorCode = kerr.UnknownTopicID.Code
				}
				stop = true
			case rp.Partition < 0 || rp.Partition >= t.Partitions:
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				stop = true
			case checkLeaderEpoch(rp.CurrentLeaderEpoch) != nil:
				sp.ErrorCode = checkLeaderEpoch(rp.CurrentLeaderEpoch).Code
				stop = true
			default:
				tp := topicPartition{dataID(t), rp.Partition} // a view reads its base's batches
				tps = append(tps, tp)
				pf := &partFetch{tp: tp, offset: rp.FetchOffset, maxBytes: int(rp.PartitionMaxBytes), sp: sp, readCommitted: req.IsolationLevel == 1}
				if t.View != nil {
					pf.viewKey = t.View.Key
				}
				todo = append(todo, pf)
			}
		}
	}
	if len(todo) == 0 {
		return resp, 0, tps, stop
	}
	// Fill order: the request's, rotated.
	parts := make([]*partFetch, len(todo))
	for i := range todo {
		parts[i] = todo[(i+rotate)%len(todo)]
	}
	b.findCoordinates(ctx, parts, budget)
	if offsetsOnly {
		for _, p := range parts {
			stop = setPartitionState(p) || stop
		}
		return resp, 0, tps, stop
	}
	b.resolveKeySegments(ctx, parts)
	b.expandSegments(ctx, parts)
	if planFetch(parts, budget) {
		stop = true
	}
	rctx, span := b.childSpan(ctx, r, "fetch.read")
	n, failed := b.readPlanned(rctx, parts, &r.bufs)
	if span != nil {
		span.SetAttributes(attribute.Int("floe.bytes", n), attribute.Bool("floe.failed", failed))
		span.End()
	}
	return resp, n, tps, stop || failed
}

// partFetch is one partition of a Fetch on its way through fetchOnce.
type partFetch struct {
	tp       topicPartition
	offset   int64
	maxBytes int // the request's partition max bytes
	sp       *kmsg.FetchResponseTopicPartition
	// viewKey is the key of a hierarchical view's fetch: only its records
	// are answered (filterView). Nil for a topic's own fetch.
	viewKey []byte
	// readCommitted stops at the last stable offset and lists the range's
	// aborted transactions (isolation level 1).
	readCommitted bool

	// found is the coordinates answer (asked for up to ask bytes), code
	// its Kafka error code (0: none).
	ask   int32
	found coordapi.FindBatchesResponse
	code  int16
	// batches are the ones planned to be read: a prefix of found.Batches.
	batches []coordapi.BatchCoord

	// posted is set when a view's coordinates came from the posting index
	// (views_fetch.go): found.Batches are then only the batches holding
	// viewKey, keyBatches what the coordinator answered before segments
	// were resolved, and viewThrough the offset the answer covers up to.
	posted      bool
	keyBatches  []coordapi.KeyBatch
	viewThrough int64
}

// findMultiRetry is how long a broker whose coordinator does not know
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
func (b *Broker) findCoordinates(ctx context.Context, parts []*partFetch, budget int) {
	var (
		misses, rest, views []*partFetch
	)
	fair := fairAsk(budget, len(parts))
	for i, p := range parts {
		ask := min(p.maxBytes, budget)
		if i > 0 {
			ask = min(ask, fair)
		}
		p.ask = int32(max(ask, 1))
		if p.viewKey != nil {
			views = append(views, p)
		} else {
			rest = append(rest, p)
		}
	}
	// Views ask the posting index; those it cannot answer read the base
	// partition like the rest.
	rest = append(rest, b.findKeyBatches(ctx, views)...)
	for _, p := range rest {
		find := b.tails.Find
		if p.readCommitted {
			find = b.tails.FindCommitted // none if the partition has aborted transactions
		}
		if found, ok := find(p.tp.id, p.tp.partition, p.offset, p.ask); ok {
			p.found = found
			continue
		}
		misses = append(misses, p)
	}
	if len(misses) == 0 {
		return
	}
	if tr := b.opts.Tracer; tr != nil && trace.SpanFromContext(ctx).IsRecording() {
		var span trace.Span
		ctx, span = tr.Start(ctx, "coordinator.find_batches", trace.WithAttributes(
			attribute.Int("floe.partitions", len(misses)), attribute.Int("floe.tail_hits", len(rest)-len(misses))))
		defer span.End()
	}
	reqs := make([]coordapi.FindBatchesRequest, len(misses))
	for i, p := range misses {
		reqs[i] = coordapi.FindBatchesRequest{TopicID: p.tp.id, Partition: p.tp.partition, Offset: p.offset, MaxBytes: p.ask, ReadCommitted: p.readCommitted}
	}
	var (
		results []coordapi.FindBatchesResult
		err     error
		multi   = len(reqs) > 1 && time.Now().UnixNano() >= b.findMultiAt.Load()
	)
	if multi {
		results, err = b.coord.FindBatchesMulti(ctx, reqs)
		if errors.Is(err, errors.ErrUnsupported) {
			b.findMultiAt.Store(time.Now().Add(findMultiRetry).UnixNano())
			b.log.Info("the coordinator does not serve batched lookups (too old, or down); fetches ask per partition",
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
		parallel(len(reqs), b.opts.FetchConcurrency, func(i int) {
			results[i] = b.findBatches(ctx, reqs[i])
		})
	case err != nil:
		code := errorCode(err)
		results = make([]coordapi.FindBatchesResult, len(reqs))
		for i := range results {
			results[i].ErrorCode = code
		}
	}
	for i, p := range misses {
		p.found, p.code = results[i].FindBatchesResponse, results[i].ErrorCode
		if p.code == 0 {
			b.tails.Verify(p.tp.id, p.tp.partition, p.found.PartitionState)
		}
	}
}

// findBatches asks the coordinator for one partition's coordinates, as a
// result of FindBatchesMulti would answer: an OFFSET_OUT_OF_RANGE result
// carries the partition's offsets (-1 when the coordinator does not give
// them).
func (b *Broker) findBatches(ctx context.Context, req coordapi.FindBatchesRequest) coordapi.FindBatchesResult {
	found, err := b.coord.FindBatches(ctx, req)
	if err == nil {
		return coordapi.FindBatchesResult{FindBatchesResponse: found}
	}
	r := coordapi.FindBatchesResult{ErrorCode: errorCode(err)}
	r.HighWatermark, r.LogStartOffset, r.LastStableOffset = -1, -1, -1 // unknown
	if errors.Is(err, kerr.OffsetOutOfRange) {
		if st, serr := b.coord.PartitionState(ctx, req.TopicID, req.Partition); serr == nil {
			r.PartitionState = st
		}
	}
	return r
}

// expandSegments replaces each part's segment coordinate (the coordinator
// answers one alone for an offset in the partition's tiered part) with the
// batches inside the segment from the part's offset, within what it asked
// for, as FindBatches answers batches; all segments at once, up to
// Options.FetchConcurrency. A segment that cannot be read fails its
// partition as a failed read does (KAFKA_STORAGE_ERROR, retriable).
func (b *Broker) expandSegments(ctx context.Context, parts []*partFetch) {
	var segs []*partFetch
	for _, p := range parts {
		if !p.posted && p.code == 0 && len(p.found.Batches) > 0 && p.found.Batches[0].Segment {
			segs = append(segs, p)
		}
	}
	if len(segs) == 0 {
		return // the common case: no closure to allocate
	}
	parallel(len(segs), b.opts.FetchConcurrency, func(i int) {
		p := segs[i]
		batches, err := b.segmentBatches(ctx, p.found.Batches[0], p.offset, p.ask)
		if err != nil {
			b.logSegmentError(ctx, "fetch", err)
			p.code, p.found.Batches = errorCode(err), nil
			return
		}
		p.found.Batches = batches
	})
}

// planFetch gives each part, in fill order, the batches the budget lets it
// read, as the sequential fill would: up to its max bytes and what the
// budget has left, the first batch whole for the first partition with
// data (even past both limits), none once the budget is spent. It fills in
// every part's offsets or error code, and reports whether some part
// failed.
func planFetch(parts []*partFetch, budget int) (failed bool) {
	total := 0
	for _, p := range parts {
		if setPartitionState(p) {
			failed = true
			continue
		}
		limit := min(p.maxBytes, budget-total)
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
			if p.readCommitted && bc.BaseOffset >= p.found.LastStableOffset {
				break // a segment's batches may reach past the LSO
			}
			size += int(bc.ByteLength)
			p.batches = p.found.Batches[:i+1]
		}
		total += size
		if p.readCommitted {
			p.sp.AbortedTransactions = abortedIn(p.found.Aborted, p.batches)
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

// rangeRead is one byte range a Fetch reads: batches [first, first+n) of
// a part, back to back in one object, landing at pos in the part's
// records.
type rangeRead struct {
	part     int // index in parts
	first, n int
	pos      int
	length   int
	err      error
}

// readPlanned reads every part's planned batches, all at once, up to
// Options.FetchConcurrency ranges in flight, and sets each part's records.
// A range that fails cuts its partition's records short before it; when
// that leaves nothing, the partition answers the error. It returns the
// bytes of records read, and whether some partition failed.
//
// With bufs, the records are read into buffers of the broker's pool, each
// appended to *bufs: the caller gives them back once the answer holding
// them is encoded, and must not use the answer's records after that.
// Without, they are the answer's own.
func (b *Broker) readPlanned(ctx context.Context, parts []*partFetch, bufs *[][]byte) (int, bool) {
	var (
		reads []rangeRead
		out   = make([][]byte, len(parts))
	)
	for pi, p := range parts {
		if len(p.batches) == 0 {
			continue
		}
		size := 0
		for i, bc := range p.batches {
			// Batches back to back in one object are read as one range.
			if prev := len(reads) - 1; i > 0 && bc.ObjectKey == p.batches[i-1].ObjectKey &&
				bc.ByteOffset == p.batches[i-1].ByteOffset+int64(p.batches[i-1].ByteLength) {
				reads[prev].n++
				reads[prev].length += int(bc.ByteLength)
			} else {
				reads = append(reads, rangeRead{part: pi, first: i, n: 1, pos: size, length: int(bc.ByteLength)})
			}
			size += int(bc.ByteLength)
		}
		if bufs != nil {
			out[pi] = b.bufs.Get(size)
			*bufs = append(*bufs, out[pi])
		} else {
			out[pi] = make([]byte, size)
		}
	}
	sparse := sparseParts(parts, reads, b.chunkBytes())
	parallel(len(reads), b.opts.FetchConcurrency, func(i int) {
		r := &reads[i]
		bc := parts[r.part].batches[r.first]
		var (
			data []byte
			err  error
		)
		if d, ok := b.directRead(parts[r.part], sparse[r.part], r.length); ok {
			data, err = d.GetRangeDirect(ctx, bc.ObjectKey, bc.ObjectSize, bc.ByteOffset, int64(r.length))
		} else {
			data, err = b.reader.GetRange(ctx, bc.ObjectKey, bc.ObjectSize, bc.ByteOffset, int64(r.length))
		}
		if err == nil && len(data) != r.length {
			err = fmt.Errorf("got %d of %d bytes", len(data), r.length)
		}
		if err != nil {
			r.err = fmt.Errorf("read batch at offset %d from %s: %w", bc.BaseOffset, bc.ObjectKey, err)
			return
		}
		copy(out[r.part][r.pos:], data)
	})
	// Cut each partition's records at its first failed range.
	cut := make([]int, len(parts)) // batches kept
	for pi, p := range parts {
		cut[pi] = len(p.batches)
	}
	var failed bool
	for i := range reads {
		r := &reads[i]
		if r.err == nil || r.first >= cut[r.part] {
			continue
		}
		cut[r.part] = r.first
		if errors.Is(r.err, objectstore.ErrNotFound) {
			// Consolidation moved the batches and the collector deleted
			// their WAL object: the tail cache's coordinates (if they came
			// from it) are stale; the next fetch asks the coordinator.
			b.tails.Forget(parts[r.part].tp.id, parts[r.part].tp.partition)
		}
		if r.first == 0 {
			parts[r.part].sp.ErrorCode = errorCode(r.err)
			failed = true
		}
	}
	total := 0
	for pi, p := range parts {
		if cut[pi] == 0 {
			if p.posted && len(p.batches) == 0 && p.code == 0 && p.sp.ErrorCode == 0 {
				// No batch of the key in what the postings covered: a bare
				// header moves the consumer past it.
				p.sp.RecordBatches = append(p.sp.RecordBatches, viewTail(p, 0)...)
				total += len(p.sp.RecordBatches)
			}
			continue
		}
		records, pos := out[pi], 0
		for _, bc := range p.batches[:cut[pi]] {
			batch := records[pos : pos+int(bc.ByteLength)]
			pos += int(bc.ByteLength)
			record.SetBaseOffset(batch, bc.BaseOffset)
			record.SetPartitionLeaderEpoch(batch, leaderEpoch)
			if bc.LogAppendTime {
				record.SetLogAppendTime(batch, bc.MaxTimestamp)
			}
		}
		// Answer what was read; the client fetches on from there.
		p.sp.RecordBatches = records[:pos]
		if p.viewKey != nil {
			p.sp.RecordBatches = filterView(records[:pos], p.viewKey)
			if tail := viewTail(p, cut[pi]); tail != nil {
				p.sp.RecordBatches = append(p.sp.RecordBatches[:len(p.sp.RecordBatches):len(p.sp.RecordBatches)], tail...)
			}
		}
		total += len(p.sp.RecordBatches)
	}
	if total > 0 {
		b.metrics.bytesOut.Add(ctx, int64(total))
	}
	return total, failed
}

// setPartitionState sets p's answer from its coordinates: its offsets, or
// its error (with the offsets for OFFSET_OUT_OF_RANGE). It reports whether
// p failed.
func setPartitionState(p *partFetch) (failed bool) {
	sp := p.sp
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

// parallel calls fn(0), ..., fn(n-1) on up to limit goroutines at once
// (limit < 1 counts as 1), and returns when all have returned. With one
// call or a limit of 1 they run on the calling goroutine, in order.
func parallel(n, limit int, fn func(i int)) {
	if n <= 1 || limit <= 1 {
		for i := range n {
			fn(i)
		}
		return
	}
	var (
		next atomic.Int64
		wg   sync.WaitGroup
	)
	for range min(n, limit) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				fn(i)
			}
		}()
	}
	wg.Wait()
}
