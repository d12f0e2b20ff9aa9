package tiered

// Compaction, the broker's side of a compaction job (doc.go, Compaction):
//
//	ClaimTierJob ─> Kind TierJobCompact ─> the compaction slot (one job at a time)
//	  ─> key map: OffsetMap over the dirty batches from DirtyOffset, until full
//	     (with the key index: KvLatestOffsets for each read window's keys instead)
//	  ─> each replaced segment: GetRange windows of whole batches ─> CompactBatch
//	  ─> output stream Writer (cut at batch boundaries, up to segment.bytes) ─> Upload ─> Close ─> Commit, one at a time
//	  ─> CompleteTierJob (Compacted: the outputs, CleanedThrough) ─> done
//	failure: AbandonTierJob and delete the outputs; refused: delete them;
//	completion unanswered: AbandonTierJob, the outputs left to the GC

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/objectstore"
	"github.com/floe-io/floe/record"
)

// KeyOffsets answers the key index's latest offset of each of keys of one
// partition, in request order, -1 for a key the index has no entry for (its
// latest record is a tombstone, or it was never written): what
// coordapi.Coordinator's KvLatestOffsets does. A compaction job over a topic
// whose key index is ready (CompactJob.KeyIndex) asks it instead of building a
// key map, so that one pass cleans the whole partition whatever its number of
// keys.
type KeyOffsets interface {
	KvLatestOffsets(ctx context.Context, req coordapi.KvOffsetsRequest) ([]int64, error)
}

// DefaultDedupeBufferBytes is the default ConsolidatorOptions.DedupeBufferBytes:
// 32 MiB, a key map of about 1.4 million keys. Kafka's
// log.cleaner.dedupe.buffer.size is 128 MiB shared by its cleaner threads.
const DefaultDedupeBufferBytes = 32 << 20

// Bounds of one KvLatestOffsets request: at most maxLookupKeys keys, and at
// most maxLookupKeyBytes of key bytes unless it holds one key.
const (
	maxLookupKeys     = 4096
	maxLookupKeyBytes = 1 << 20
)

// defaultCompactSegmentBytes groups a compaction job's outputs when the job
// names no segment.bytes: the topic config's default.
const defaultCompactSegmentBytes = 128 << 20

// errNoKeyIndex fails a job that asks the key index on a Consolidator without
// one.
var errNoKeyIndex = errors.New("tiered: the compaction job asks the key index, and the Consolidator has none (ConsolidatorOptions.KeyIndex)")

// errKeyMapFull stops a key map pass at the batch whose keys do not fit.
var errKeyMapFull = errors.New("tiered: key map full")

// runCompactJob runs compaction job job, claimed at start, and returns its
// outcome and, when completed, what it reported. It waits for the compaction
// slot under the job's context. The outputs are deleted when no coordinator
// row can name them (the job failed before its completion, or the
// coordinator refused it), and left to the GC when the completion may have
// committed.
func (c *Consolidator) runCompactJob(ctx context.Context, job coordapi.TierJob, start time.Time) (outcome int, res *coordapi.CompactResult, err error) {
	jctx, cancel, err := c.leaseContext(ctx, job, start)
	if err != nil {
		c.abandon(ctx, job, err)
		return outcomeFailed, nil, err
	}
	defer cancel()
	select {
	case c.compaction.slot <- struct{}{}:
		defer func() { <-c.compaction.slot }()
	case <-jctx.Done():
		err := fmt.Errorf("wait for the running compaction job: %w", jctx.Err())
		c.abandon(ctx, job, err)
		return outcomeFailed, nil, err
	}

	// The job's buffers: an output's upload part, a read window and the
	// window's compacted batches.
	window := max(c.opts.MaxReadBytes, record.HeaderSize)
	reserved, err := c.budget.acquire(jctx, objectstore.UploadBufferBytes+2*window)
	if err != nil {
		err = fmt.Errorf("wait for job buffers: %w", err)
		c.abandon(ctx, job, err)
		return outcomeFailed, nil, err
	}
	defer c.budget.release(reserved)

	r := &compactRun{c: c, job: job, window: window, reserved: reserved}
	req, err := r.run(jctx)
	if err != nil {
		r.abortOutput(ctx)
		c.deleteObjects(ctx, job, r.uploaded)
		c.abandon(ctx, job, err)
		return outcomeFailed, nil, err
	}
	res = req.Compacted
	err = c.jobs.CompleteTierJob(jctx, req)
	switch {
	case err == nil:
		c.log.Info("tiered: compaction job completed", "job", job.ID, "topic_id", job.TopicID.String(), "partition", job.Partition,
			"base_offset", job.BaseOffset, "last_offset", req.LastOffset, "cleaned_through", res.CleanedThrough,
			"key_index", job.Compact.KeyIndex, "segments_in", r.replaced, "segments_out", len(res.Segments),
			"bytes_in", res.BytesIn, "bytes_out", res.BytesOut, "records_in", res.RecordsIn, "records_out", res.RecordsOut,
			"elapsed", c.opts.Now().Sub(start))
		return outcomeCompleted, res, nil
	case errors.Is(err, kerr.StaleBrokerEpoch):
		// The coordinator's refusal, made before any swap: no row names
		// the outputs.
		c.deleteObjects(ctx, job, r.uploaded)
		return outcomeRefused, nil, fmt.Errorf("complete: refused as stale: %w", err)
	default:
		// The swap may have committed (a timeout, a lost answer, as for a
		// consolidation): the outputs stay, and the GC collects those no
		// row names.
		err = fmt.Errorf("complete (%d segments left to the GC): %w", len(r.uploaded), err)
		c.abandon(ctx, job, err)
		return outcomeFailed, nil, err
	}
}

// deleteObjects deletes segments no coordinator row names, best effort.
func (c *Consolidator) deleteObjects(ctx context.Context, job coordapi.TierJob, keys []string) {
	for _, key := range keys {
		c.deleteObject(ctx, job, key)
	}
}

// dedupeBuffer returns the Consolidator's key map, allocating it on first
// use. The caller holds the compaction slot.
func (c *Consolidator) dedupeBuffer() (*OffsetMap, error) {
	if c.compaction.keys == nil {
		m, err := NewOffsetMap(c.opts.DedupeBufferBytes, 0)
		if err != nil {
			return nil, fmt.Errorf("dedupe buffer: %w", err)
		}
		c.compaction.keys = m
	}
	return c.compaction.keys, nil
}

// checkCompactJob checks that job is a compaction job over a contiguous run
// of segments covering its range, with sorted producer offsets.
func checkCompactJob(job coordapi.TierJob) error {
	cj := job.Compact
	switch {
	case cj == nil:
		return fmt.Errorf("%w: a compaction job without its CompactJob", ErrBadJob)
	case len(job.Batches) > 0:
		return fmt.Errorf("%w: a compaction job with %d WAL batches", ErrBadJob, len(job.Batches))
	case len(cj.Segments) == 0:
		return fmt.Errorf("%w: no segments", ErrBadJob)
	}
	segs := cj.Segments
	if first, last := segs[0], segs[len(segs)-1]; first.BaseOffset != job.BaseOffset || last.LastOffset != job.LastOffset {
		return fmt.Errorf("%w: segments cover %d-%d, the job %d-%d", ErrBadJob, first.BaseOffset, last.LastOffset, job.BaseOffset, job.LastOffset)
	}
	for i, seg := range segs {
		switch {
		case !seg.Segment:
			return fmt.Errorf("%w: coordinate %d is a WAL batch, not a segment", ErrBadJob, i)
		case seg.LastOffset < seg.BaseOffset:
			return fmt.Errorf("%w: segment %d has offsets %d-%d", ErrBadJob, i, seg.BaseOffset, seg.LastOffset)
		case i > 0 && seg.BaseOffset != segs[i-1].LastOffset+1:
			return fmt.Errorf("%w: segment %d starts at %d, after %d", ErrBadJob, i, seg.BaseOffset, segs[i-1].LastOffset)
		case seg.ByteLength <= 0 || seg.ByteOffset != 0 || int64(seg.ByteLength) > seg.ObjectSize-TrailerSize:
			return fmt.Errorf("%w: segment %d's data part of %d bytes at %d does not fit %s (%d bytes)", ErrBadJob, i, seg.ByteLength, seg.ByteOffset, seg.ObjectKey, seg.ObjectSize)
		}
	}
	if !slices.IsSorted(cj.ProducerLastOffsets) {
		return fmt.Errorf("%w: producer last offsets are not sorted", ErrBadJob)
	}
	return nil
}

// compactRun is one compaction job's work, from its key map to the request
// that completes it. Its memory: the key map (the Consolidator's dedupe
// buffer) or one window's keys, one read window and out (one output
// segment).
type compactRun struct {
	c   *Consolidator
	job coordapi.TierJob
	cj  *coordapi.CompactJob

	window   int64 // the bytes of one read
	reserved int64 // the job's bytes of the Consolidator's budget
	segBytes int64 // the outputs' target size

	keys     *OffsetMap       // the key map; nil with the key index
	latest   map[string]int64 // with the key index: the window's keys' latest offsets
	lookups  [][]byte         // with the key index: the window's keys, in lookup order
	keyBytes []byte           // the bytes lookups slice
	cleaned  int64            // cleanedThrough: the last offset the pass indexed

	policy CompactPolicy
	comp   compactor
	// txnSeen holds the producers a batch of whose current transaction
	// the pass has read since their last marker.
	txnSeen map[int64]bool
	segLast int64      // the last offset of the input being compacted
	batches []segBatch // one window's batches, reused

	next     int64                       // the base offset of the next output
	rest     int64                       // the replaced inputs' bytes not read yet
	out      *Writer                     // the output being built, nil between outputs
	up       objectstore.Upload          // out's upload
	outKey   string                      // out's object key
	outSeg   coordapi.CompactedSegment   // what out holds so far
	segments []coordapi.CompactedSegment // the outputs put
	uploaded []string                    // keys of the outputs put or tried
	replaced int                         // input segments replaced
	stats    CompactStats
	horizon  int64 // the smallest delete horizon of an output batch with records, -1 none
}

// segBatch is one whole batch of a read window.
type segBatch struct {
	h record.Header
	b []byte // aliases the window
}

// run runs the job and returns the request that completes it.
func (r *compactRun) run(ctx context.Context) (coordapi.CompleteTierJobRequest, error) {
	if err := checkCompactJob(r.job); err != nil {
		return coordapi.CompleteTierJobRequest{}, err
	}
	r.cj = r.job.Compact
	r.segBytes = r.cj.SegmentBytes
	if r.segBytes <= 0 {
		r.segBytes = defaultCompactSegmentBytes
	}
	r.segBytes = min(r.segBytes, maxDataLength)
	r.horizon = -1
	r.next = r.job.BaseOffset

	if r.cj.KeyIndex {
		if r.c.opts.KeyIndex == nil {
			return coordapi.CompleteTierJobRequest{}, errNoKeyIndex
		}
		r.latest = map[string]int64{}
		r.cleaned = r.job.LastOffset
	} else {
		m, err := r.c.dedupeBuffer()
		if err != nil {
			return coordapi.CompleteTierJobRequest{}, err
		}
		r.keys = m
		if r.cleaned, err = r.buildKeyMap(ctx); err != nil {
			return coordapi.CompleteTierJobRequest{}, err
		}
	}

	segs := r.cj.Segments
	r.replaced = sort.Search(len(segs), func(i int) bool { return segs[i].BaseOffset > r.cleaned })
	if r.replaced == 0 {
		return coordapi.CompleteTierJobRequest{}, fmt.Errorf("tiered: the key map covers through %d, before the first segment at %d", r.cleaned, segs[0].BaseOffset)
	}
	r.txnSeen = map[int64]bool{}
	r.policy = CompactPolicy{Keep: r.keep, RetainEmpty: r.retainEmpty, Marker: r.marker, NowMs: r.cj.NowMs, StampThrough: r.cleaned}
	if r.cj.DeleteRetentionMs >= 0 {
		r.policy.StampHorizon = r.cj.NowMs + min(r.cj.DeleteRetentionMs, math.MaxInt64-max(r.cj.NowMs, 0))
	}
	for _, seg := range segs[:r.replaced] {
		r.rest += int64(seg.ByteLength)
	}
	for _, seg := range segs[:r.replaced] {
		if err := r.compactSegment(ctx, seg); err != nil {
			return coordapi.CompleteTierJobRequest{}, fmt.Errorf("segment %s (offsets %d-%d): %w", seg.ObjectKey, seg.BaseOffset, seg.LastOffset, err)
		}
	}
	if err := r.flush(ctx); err != nil {
		return coordapi.CompleteTierJobRequest{}, err
	}
	return coordapi.CompleteTierJobRequest{
		JobID:      r.job.ID,
		TopicID:    r.job.TopicID,
		Partition:  r.job.Partition,
		BaseOffset: r.job.BaseOffset,
		LastOffset: segs[r.replaced-1].LastOffset,
		Compacted: &coordapi.CompactResult{
			CleanedThrough:     r.cleaned,
			Segments:           r.segments,
			TombstoneHorizonMs: r.horizon,
			BytesIn:            r.stats.BytesIn,
			BytesOut:           r.stats.BytesOut,
			RecordsIn:          r.stats.RecordsIn,
			RecordsOut:         r.stats.RecordsKept,
		},
	}, nil
}

// buildKeyMap builds the key map over the job's dirty batches, from
// DirtyOffset on, as Kafka's Cleaner.buildOffsetMap does: each keyed record
// put with its offset, batch by batch, until the next batch's records might
// not fit. It returns the last offset the map covers, the pass's
// cleanedThrough.
func (r *compactRun) buildKeyMap(ctx context.Context) (int64, error) {
	m, dirty := r.keys, r.cj.DirtyOffset
	m.Reset()
	m.AdvanceLatestOffset(dirty - 1)
	for _, seg := range r.cj.Segments {
		if seg.LastOffset < dirty {
			continue
		}
		err := r.scanSegment(ctx, seg, func(batches []segBatch) error {
			for i := range batches {
				if err := r.indexBatch(&batches[i], dirty); err != nil {
					return err
				}
			}
			return nil
		})
		if errors.Is(err, errKeyMapFull) {
			break
		}
		if err != nil {
			return 0, fmt.Errorf("key map: segment %s (offsets %d-%d): %w", seg.ObjectKey, seg.BaseOffset, seg.LastOffset, err)
		}
	}
	return m.LatestOffset(), nil
}

// indexBatch puts the keys of one batch's records from dirty on into the key
// map, or returns errKeyMapFull when they might not fit. A batch that does
// not fit an empty map is an error: no pass could ever index it.
func (r *compactRun) indexBatch(sb *segBatch, dirty int64) error {
	m, h := r.keys, &sb.h
	last := h.BaseOffset + int64(h.LastOffsetDelta)
	switch {
	case last < dirty:
		return nil
	case h.Control(), r.abortedBatch(h):
		// Markers and aborted records are no key's latest.
		m.AdvanceLatestOffset(last)
		return nil
	case m.Len()+int(h.NumRecords) > m.Cap():
		if m.Len() == 0 {
			return fmt.Errorf("tiered: dedupe buffer of %d bytes holds fewer keys (%d) than one batch's %d records (offset %d)",
				m.SizeBytes(), m.Cap(), h.NumRecords, h.BaseOffset)
		}
		return errKeyMapFull
	}
	err := record.Records(sb.b, func(rec *record.Record) error {
		if off := h.BaseOffset + int64(rec.OffsetDelta); rec.Key != nil && off >= dirty && !m.Put(rec.Key, off) {
			return errKeyMapFull // not reached: the batch's records fit
		}
		return nil
	})
	switch {
	case errors.Is(err, errKeyMapFull):
		return err
	case err != nil:
		return fmt.Errorf("%w: records of the batch at offset %d: %w", ErrCorrupt, h.BaseOffset, err)
	}
	m.AdvanceLatestOffset(last)
	return nil
}

// abortedBatch reports whether a transactional batch's records belong to
// an aborted transaction of the job.
func (r *compactRun) abortedBatch(h *record.Header) bool {
	if !h.Transactional() || h.Control() {
		return false
	}
	for _, a := range r.cj.Aborted {
		if a.ProducerID == h.ProducerID && a.FirstOffset <= h.BaseOffset && h.BaseOffset <= a.LastOffset {
			return true
		}
	}
	return false
}

// keep is the job's record rule (doc.go, Compaction).
func (r *compactRun) keep(rec RecordInfo) bool {
	if rec.Offset > r.cleaned {
		return true // the pass did not index it
	}
	if r.abortedBatch(rec.Batch) {
		return false // an aborted transaction's record: removed, as Kafka's cleaner does
	}
	if r.latest != nil {
		switch latest, ok := r.latest[string(rec.Key)]; {
		case !ok || latest < -1:
			// Not asked (lookup asks every key of the window): kept.
		case latest >= 0 && rec.Offset < latest:
			return false
		case latest == -1 && !rec.Tombstone:
			return false // the key's latest record is a tombstone at or after it
		}
	} else if latest, ok := r.keys.Get(rec.Key); ok && rec.Offset < latest {
		return false
	}
	return !HorizonPassed(rec, r.cj.NowMs)
}

// marker is the job's rule for a control batch (doc.go, Compaction): a
// commit marker may go once no batch of its transaction is left, as Kafka's
// cleaner lets it, provided the pass indexed it. An abort marker stays: the
// coordinator lists its transaction to read_committed consumers, who need
// the marker to end the transaction's span.
func (r *compactRun) marker(h record.Header, commit bool) bool {
	seen := r.txnSeen[h.ProducerID]
	delete(r.txnSeen, h.ProducerID) // the marker ends the transaction
	return commit && !seen && h.BaseOffset+int64(h.LastOffsetDelta) <= r.cleaned
}

// retainEmpty keeps an emptied batch as a bare header when it holds a
// producer's last sequence, or when it is its input segment's last batch, so
// that every output ends at its last input's last offset.
func (r *compactRun) retainEmpty(h record.Header) bool {
	last := h.BaseOffset + int64(h.LastOffsetDelta)
	if last == r.segLast {
		return true
	}
	_, found := slices.BinarySearch(r.cj.ProducerLastOffsets, last)
	return found
}

// compactSegment compacts seg's batches into the outputs: each batch left
// is appended to the output being built, which is finished and uploaded
// first when the batch would take it past segment.bytes (outputs are cut
// at batch boundaries, inside an input or between two). The input's last
// batch is always kept, so the last output ends at the last input's last
// offset.
func (r *compactRun) compactSegment(ctx context.Context, seg coordapi.BatchCoord) error {
	r.segLast = seg.LastOffset
	err := r.scanSegment(ctx, seg, func(batches []segBatch) error {
		if r.latest != nil {
			if err := r.lookup(ctx, batches); err != nil {
				return err
			}
		}
		for i := range batches {
			sb := &batches[i]
			if sb.h.Transactional() && !sb.h.Control() {
				r.txnSeen[sb.h.ProducerID] = true
			}
			out, st, err := r.comp.compact(sb.b, sb.h, &r.policy)
			if err != nil {
				return err
			}
			r.stats.add(st)
			r.rest -= int64(len(sb.b))
			if len(out) == 0 {
				continue
			}
			if st.TombstonesKept > 0 || sb.h.Control() {
				r.noteHorizon(out)
			}
			if err := r.place(ctx, out); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if r.out == nil || r.outSeg.LastOffset != seg.LastOffset { // not reached: the last batch is retained
		return fmt.Errorf("tiered: compaction of the segment left no batch ending at its last offset %d", seg.LastOffset)
	}
	return nil
}

// lookup asks the key index for the latest offsets of the keys of batches,
// one read window, into r.latest, in requests of at most maxLookupKeys keys
// and maxLookupKeyBytes.
func (r *compactRun) lookup(ctx context.Context, batches []segBatch) error {
	clear(r.latest)
	clear(r.lookups)
	r.lookups, r.keyBytes = r.lookups[:0], r.keyBytes[:0]
	for i := range batches {
		h := &batches[i].h
		if h.Control() || h.NumRecords == 0 {
			continue
		}
		err := record.Records(batches[i].b, func(rec *record.Record) error {
			if rec.Key == nil || h.BaseOffset+int64(rec.OffsetDelta) > r.cleaned {
				return nil
			}
			if _, ok := r.latest[string(rec.Key)]; !ok {
				r.latest[string(rec.Key)] = -2 // asked below
				// The request's copy of the key, from one buffer per window
				// (slices taken before it grew keep the old array's bytes).
				start := len(r.keyBytes)
				r.keyBytes = append(r.keyBytes, rec.Key...)
				r.lookups = append(r.lookups, r.keyBytes[start:len(r.keyBytes):len(r.keyBytes)])
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("%w: records of the batch at offset %d: %w", ErrCorrupt, h.BaseOffset, err)
		}
	}
	for keys := r.lookups; len(keys) > 0; {
		n := lookupChunk(keys)
		chunk := keys[:n:n]
		keys = keys[n:]
		offs, err := r.c.opts.KeyIndex.KvLatestOffsets(ctx, coordapi.KvOffsetsRequest{TopicID: r.job.TopicID, Partition: r.job.Partition, Keys: chunk})
		if err != nil {
			return fmt.Errorf("key index: latest offsets of %d keys: %w", len(chunk), err)
		}
		if len(offs) != len(chunk) {
			return fmt.Errorf("key index: %d offsets for %d keys", len(offs), len(chunk))
		}
		for i, key := range chunk {
			if offs[i] < -1 {
				return fmt.Errorf("key index: offset %d for a key", offs[i])
			}
			r.latest[string(key)] = offs[i]
		}
	}
	return nil
}

// lookupChunk returns how many of keys, at least one, the next
// KvLatestOffsets request takes: up to maxLookupKeys keys and
// maxLookupKeyBytes of key bytes.
func lookupChunk(keys [][]byte) int {
	n, size := 0, 0
	for n < len(keys) && n < maxLookupKeys {
		size += len(keys[n])
		if n > 0 && size > maxLookupKeyBytes {
			break
		}
		n++
	}
	return max(n, min(1, len(keys)))
}

// scanSegment reads seg's data part, [0, ByteLength), in windows of at most
// r.window bytes, and calls fn with each window's whole batches, in order.
// A batch the window cuts is read again from its start by the next window;
// a batch larger than a window is read alone. The batches alias bytes the
// reader may share: fn must not modify them or keep them past its return.
// Every batch is checked (header, length, CRC, record count), and their
// offsets must strictly increase within [BaseOffset, LastOffset], the last
// one ending at LastOffset: else an ErrCorrupt error.
func (r *compactRun) scanSegment(ctx context.Context, seg coordapi.BatchCoord, fn func([]segBatch) error) error {
	end := int64(seg.ByteLength)
	next := seg.BaseOffset // the least base offset the next batch may have
	var extra int64        // budget bytes for a batch larger than a window
	defer func() { r.c.budget.release(extra) }()
	for pos := int64(0); pos < end; {
		r.c.budget.release(extra) // the previous window's
		extra = 0
		if err := ctx.Err(); err != nil {
			return err
		}
		// Windows end at multiples of the window size, so that with the
		// window a chunk's size (the node sets MaxReadBytes so) each read
		// is one chunk the cache hands out as it holds it, without a copy.
		// A batch across a boundary is read alone, between two windows.
		n := min(r.window-pos%r.window, end-pos)
		if n < record.HeaderSize {
			n = min(record.HeaderSize, end-pos) // a header across the boundary: its batch is read alone
		}
		data, err := r.read(ctx, seg, pos, n)
		if err != nil {
			return err
		}
		r.batches = r.batches[:0]
		at := int64(0)
	window:
		for at < n {
			if n-at < record.HeaderSize {
				if at > 0 {
					break // the next window starts with it
				}
				return corruptf("segment %s: %d bytes at byte %d, less than a batch header", seg.ObjectKey, n-at, pos+at)
			}
			h, err := record.ParseHeader(data[at:])
			if err != nil {
				return fmt.Errorf("%w: segment %s: batch at byte %d: %w", ErrCorrupt, seg.ObjectKey, pos+at, err)
			}
			size := int64(h.Size())
			switch {
			case size > end-pos-at:
				return corruptf("segment %s: batch at byte %d of %d bytes runs past the data part's %d", seg.ObjectKey, pos+at, size, end)
			case size > n-at && at > 0:
				break window // the next window starts with it
			case size > n-at:
				// Larger than a window: read alone, with budget for the
				// rest (as much as the budget can ever give this job).
				if want := min(size-r.window, r.c.budget.limit-r.reserved); want > 0 {
					if extra, err = r.c.budget.acquire(ctx, want); err != nil {
						return fmt.Errorf("wait for job buffers: %w", err)
					}
				}
				if data, err = r.read(ctx, seg, pos, size); err != nil {
					return err
				}
				n = size
			}
			b := data[at : at+size : at+size]
			if err := checkStored(b, h); err != nil {
				return fmt.Errorf("segment %s: batch at byte %d: %w", seg.ObjectKey, pos+at, err)
			}
			last := h.BaseOffset + int64(h.LastOffsetDelta)
			if h.BaseOffset < next || last < h.BaseOffset || last > seg.LastOffset {
				return corruptf("segment %s: batch at byte %d has offsets %d-%d, want within %d-%d", seg.ObjectKey, pos+at, h.BaseOffset, last, next, seg.LastOffset)
			}
			next = last + 1
			r.batches = append(r.batches, segBatch{h: h, b: b})
			at += size
		}
		if err := fn(r.batches); err != nil {
			return err
		}
		pos += at
	}
	if next != seg.LastOffset+1 {
		return corruptf("segment %s: batches end at offset %d, the segment at %d", seg.ObjectKey, next-1, seg.LastOffset)
	}
	return nil
}

// read reads n bytes of seg's object from pos.
func (r *compactRun) read(ctx context.Context, seg coordapi.BatchCoord, pos, n int64) ([]byte, error) {
	if err := r.c.io.wait(ctx, n); err != nil {
		return nil, err
	}
	data, err := r.c.wal.GetRange(ctx, seg.ObjectKey, seg.ObjectSize, pos, n)
	if err != nil {
		return nil, fmt.Errorf("read segment %s at %d+%d: %w", seg.ObjectKey, pos, n, err)
	}
	if int64(len(data)) != n {
		return nil, fmt.Errorf("read segment %s at %d+%d: %d bytes", seg.ObjectKey, pos, n, len(data))
	}
	return data, nil
}

// place appends b, one compacted batch, to the output being built, first
// finishing and uploading that output when it has batches and b would take
// it past segment.bytes. A new output starts right after the previous one
// (the job's base offset for the first), so the outputs cover the replaced
// inputs' range without a gap; its first batch may start later.
func (r *compactRun) place(ctx context.Context, b []byte) error {
	h, err := record.ParseHeader(b)
	if err != nil || h.Size() != len(b) { // not reached: compact checked it
		return fmt.Errorf("tiered: compacted batch of %d bytes: %v", len(b), err)
	}
	if r.out != nil && r.out.dataLength()+int64(len(b)) > r.segBytes {
		if err := r.flush(ctx); err != nil {
			return err
		}
	}
	if r.out == nil {
		key := coordapi.SegmentKey(r.c.opts.Prefix, r.job.TopicID, r.job.Partition, r.next, uniqueName(r.job.ID))
		up, err := r.c.newUpload(ctx, key)
		if err != nil {
			return fmt.Errorf("start upload of segment %s: %w", key, err)
		}
		w, err := NewStreamWriter(r.next, Options{IndexIntervalBytes: r.c.opts.IndexIntervalBytes}, up)
		if err != nil {
			r.c.abortUpload(ctx, r.job, key, up)
			return fmt.Errorf("new segment writer: %w", err)
		}
		r.out, r.up, r.outKey = w, up, key
		r.outSeg = coordapi.CompactedSegment{BaseOffset: r.next, MaxTimestamp: -1, MaxTimestampOffset: -1, MaxTimestampLast: -1}
	}
	// Segment batches carry their append time already: Append, not
	// AppendLogAppendTime.
	if err := r.out.Append(b, h.BaseOffset, r.c.opts.LeaderEpoch); err != nil {
		return fmt.Errorf("output segment at %d: %w", r.outSeg.BaseOffset, err)
	}
	r.noteBatch(h)
	r.outSeg.LastOffset = h.BaseOffset + int64(h.LastOffsetDelta)
	return nil
}

// noteBatch counts output batch h in r.outSeg: its batches and max
// timestamp as the coordinator tracks them (ties keep the earlier batch; a
// CreateTime batch answers its last offset, a LogAppendTime one its base).
func (r *compactRun) noteBatch(h record.Header) {
	s := &r.outSeg
	s.Batches++
	last := h.BaseOffset + int64(h.LastOffsetDelta)
	if h.MaxTimestamp > s.MaxTimestamp {
		s.MaxTimestamp, s.MaxTimestampLast, s.MaxTimestampOffset = h.MaxTimestamp, last, last
		if h.LogAppendTime() {
			s.MaxTimestampOffset = h.BaseOffset
		}
	}
}

// noteHorizon lowers r.horizon to the delete horizon of b, an output batch
// that holds tombstones, if it has one. A batch whose tombstones are gone
// keeps its horizon (as Kafka's does) but no longer counts: the next pass is
// due when a tombstone can go, not before.
func (r *compactRun) noteHorizon(b []byte) {
	h, err := record.ParseHeader(b)
	if err == nil && h.Attributes&record.AttrDeleteHorizon != 0 && (r.horizon < 0 || h.BaseTimestamp < r.horizon) {
		r.horizon = h.BaseTimestamp
	}
}

// flush finishes the output being built, if any, commits its upload and
// records it in r.segments.
func (r *compactRun) flush(ctx context.Context) error {
	if r.out == nil {
		return nil
	}
	info, err := r.out.Close()
	s := r.outSeg
	if err != nil {
		return fmt.Errorf("finish segment at %d: %w", s.BaseOffset, err)
	}
	if info.BaseOffset != s.BaseOffset || info.LastOffset != s.LastOffset || int64(info.BatchCount) != s.Batches || info.MaxTimestamp != s.MaxTimestamp {
		// Not reached: the last input batch is always written.
		return fmt.Errorf("tiered: output segment holds %d-%d in %d batches (max timestamp %d), its inputs end %d-%d in %d (%d)",
			info.BaseOffset, info.LastOffset, info.BatchCount, info.MaxTimestamp, s.BaseOffset, s.LastOffset, s.Batches, s.MaxTimestamp)
	}
	key, up := r.outKey, r.up
	r.out, r.up = nil, nil
	r.uploaded = append(r.uploaded, key) // a failed Commit may still have written it
	if err := up.Commit(ctx); err != nil {
		r.c.abortUpload(ctx, r.job, key, up)
		return fmt.Errorf("put segment %s: %w", key, err)
	}
	s.ObjectKey, s.ObjectSize, s.DataLength = key, info.Size, info.DataLength
	r.segments = append(r.segments, s)
	r.next = s.LastOffset + 1
	return nil
}

// abortOutput aborts the upload of the output being built, if any.
func (r *compactRun) abortOutput(ctx context.Context) {
	if r.up != nil {
		r.c.abortUpload(ctx, r.job, r.outKey, r.up)
		r.out, r.up = nil, nil
	}
}
