package kvindex

import (
	"context"
	"fmt"

	"github.com/cockroachdb/pebble"

	"github.com/floe-io/floe/record"
)

// RebuildPostings builds topicID's postings from its log over its first partitions
// partitions, and marks the topic ready when done, as Rebuild does for the key index
// (same contract: the topic must carry the marker of a committed SetReady(b, id,
// false), committed with the change that turned hierarchical.enabled on; it returns
// ErrRebuildAborted when the marker is not there or goes away; commits Apply their
// postings meanwhile, and the replay catches up with the high watermark before it
// finishes a partition). A replayed posting and one Apply wrote for the same batch are
// the same key and value, so they never conflict.
func RebuildPostings(ctx context.Context, p *Postings, topicID [16]byte, partitions int32, src LogSource) error {
	marked, err := p.rebuilding(topicID)
	if err != nil {
		return err
	}
	if !marked {
		return ErrRebuildAborted
	}
	b := p.db.NewBatch()
	defer func() { b.Close() }()
	commit := func(opts *pebble.WriteOptions) error {
		if b.Empty() && opts == pebble.NoSync {
			return nil
		}
		marked, err := p.rebuilding(topicID)
		if err != nil {
			return err
		}
		if !marked {
			return ErrRebuildAborted
		}
		if err := p.commit(b, opts); err != nil {
			return fmt.Errorf("kvindex: postings rebuild commit: %w", err)
		}
		b.Reset()
		return nil
	}
	lower, upper := p.postingBounds(topicID)
	if err := b.DeleteRange(lower, upper, nil); err != nil {
		return fmt.Errorf("kvindex: postings rebuild: %w", err)
	}
	if err := commit(pebble.NoSync); err != nil {
		return err
	}
	var keys [][]byte
	for part := range partitions {
		hwm, err := src.HighWatermark(ctx, topicID, part)
		if err != nil {
			return fmt.Errorf("kvindex: postings rebuild partition %d: %w", part, err)
		}
		var next int64
		for next < hwm {
			progressed := false
			for lb, err := range src.Batches(ctx, topicID, part, next) {
				if err == nil {
					err = ctx.Err()
				}
				if err != nil {
					return fmt.Errorf("kvindex: postings rebuild partition %d: %w", part, err)
				}
				h, err := record.ParseHeader(lb.Data)
				if err != nil {
					return fmt.Errorf("kvindex: postings rebuild partition %d: batch at %d: %w", part, lb.BaseOffset, err)
				}
				last := lb.BaseOffset + int64(h.LastOffsetDelta)
				if !h.Control() {
					data := lb.Data
					if size := h.Size(); size < len(data) {
						data = data[:size]
					}
					keys = keys[:0]
					err = record.Records(data, func(r *record.Record) error {
						if r.Key != nil {
							keys = append(keys, append([]byte(nil), r.Key...))
						}
						return nil
					})
					if err != nil {
						return fmt.Errorf("kvindex: postings rebuild partition %d: batch at %d: %w", part, lb.BaseOffset, err)
					}
					p.Apply(b, topicID, part, lb.BaseOffset, last, int32(h.Size()), keys)
				}
				if last+1 > next {
					next, progressed = last+1, true
				}
				if b.Len() >= rebuildFlushBytes {
					if err := commit(pebble.NoSync); err != nil {
						return err
					}
				}
			}
			if !progressed {
				next = max(next, hwm)
			}
			if err := commit(pebble.NoSync); err != nil {
				return err
			}
			if hwm, err = src.HighWatermark(ctx, topicID, part); err != nil {
				return fmt.Errorf("kvindex: postings rebuild partition %d: %w", part, err)
			}
		}
	}
	p.SetReady(b, topicID, true)
	return commit(pebble.Sync)
}
