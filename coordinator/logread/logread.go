// Package logread reads a partition's committed log back from the object
// store, batch by batch, for the coordinator's builds of a topic's key
// index and postings from the log (kvindex.Rebuild): it asks where the
// batches are (Finder, the coordinator's FindBatches) and reads them
// (Objects), a WAL batch at a time and a segment a window at a time.
// It holds no state and takes no locks.
package logread

import (
	"context"
	"errors"
	"fmt"
	"iter"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/kvindex"
	"github.com/floe-io/floe/record"
	"github.com/floe-io/floe/tiered"
)

// Finder answers where a partition's batches are: the coordinator.
type Finder interface {
	FindBatches(ctx context.Context, req coordapi.FindBatchesRequest) (coordapi.FindBatchesResponse, error)
}

// Objects reads batch bytes back from object storage.
type Objects interface {
	GetRange(ctx context.Context, key string, off, n int64) ([]byte, error)
}

// Batches yields the batches of a partition from offset from on, to its
// end as FindBatches answers it, each with its base offset; an offset
// below the log start goes on from the log start. An error ends it.
func Batches(ctx context.Context, find Finder, objects Objects, id coordapi.TopicID, partition int32, from int64) iter.Seq2[kvindex.LogBatch, error] {
	return func(yield func(kvindex.LogBatch, error) bool) {
		offset := from
		for {
			found, err := find.FindBatches(ctx, coordapi.FindBatchesRequest{TopicID: id, Partition: partition, Offset: offset, MaxBytes: 4 << 20})
			if errors.Is(err, kerr.OffsetOutOfRange) && offset < found.LogStartOffset {
				offset = found.LogStartOffset
				continue
			}
			if err != nil {
				yield(kvindex.LogBatch{}, err)
				return
			}
			if len(found.Batches) == 0 {
				return
			}
			for _, bc := range found.Batches {
				if bc.Segment {
					next, ok := SegmentBatches(ctx, objects, bc, offset, yield)
					if !ok {
						return
					}
					offset = next
					continue
				}
				data, err := objects.GetRange(ctx, bc.ObjectKey, bc.ByteOffset, int64(bc.ByteLength))
				if err != nil {
					yield(kvindex.LogBatch{}, fmt.Errorf("read batch %d of %s: %w", bc.BaseOffset, bc.ObjectKey, err))
					return
				}
				if !yield(kvindex.LogBatch{Data: data, BaseOffset: bc.BaseOffset}, nil) {
					return
				}
				offset = bc.LastOffset + 1
			}
		}
	}
}

// SegmentWindow is how much of a segment's data SegmentBatches reads at a
// time.
const SegmentWindow = 8 << 20

// SegmentBatches yields the batches of segment seg from the one holding
// offset on, reading its data part a window at a time (its batches carry
// their real base offsets). It returns the offset after the segment, and
// false when it stopped early (an error was yielded, or yield said stop).
func SegmentBatches(ctx context.Context, objects Objects, seg coordapi.BatchCoord, offset int64, yield func(kvindex.LogBatch, error) bool) (int64, bool) {
	fail := func(err error) (int64, bool) {
		yield(kvindex.LogBatch{}, fmt.Errorf("read segment %s: %w", seg.ObjectKey, err))
		return 0, false
	}
	var pos int64
	for pos < int64(seg.ByteLength) {
		data, err := objects.GetRange(ctx, seg.ObjectKey, pos, min(SegmentWindow, int64(seg.ByteLength)-pos))
		if err != nil {
			return fail(err)
		}
		if h, err := record.ParseHeader(data); err == nil && h.Size() > len(data) {
			// One batch larger than the window: read the rest of it, if
			// the segment holds it (a header's length is the object's
			// bytes, not to be trusted past the segment).
			if int64(h.Size()) > int64(seg.ByteLength)-pos {
				return fail(fmt.Errorf("a batch of %d bytes at byte %d runs past the segment's %d", h.Size(), pos, seg.ByteLength))
			}
			rest, err := objects.GetRange(ctx, seg.ObjectKey, pos+int64(len(data)), int64(h.Size()-len(data)))
			if err != nil {
				return fail(err)
			}
			data = append(data, rest...)
		}
		used := 0
		for h, b := range tiered.Batches(data) {
			if h.BaseOffset+int64(h.LastOffsetDelta) >= offset && !yield(kvindex.LogBatch{Data: b, BaseOffset: h.BaseOffset}, nil) {
				return 0, false
			}
			used += len(b)
		}
		if used == 0 {
			// Batches stops at a header that does not parse or a batch
			// past the data.
			return fail(fmt.Errorf("no whole batch at byte %d", pos))
		}
		pos += int64(used)
	}
	return seg.LastOffset + 1, true
}
