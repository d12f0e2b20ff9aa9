// Package rowscan decides, from the batch rows of one partition that a
// Pebble iterator shows, what the coordinator's reads answer: the batches
// a fetch reads (Batches, for FindBatches and KvGet), where a key's
// posting's batch lives now (ResolvePosting) and the abort markers a
// read_committed FindKeyBatches answers with them (WithAbortMarkers). The
// coordinator opens the iterator under its locks, so that it sees every
// batch below the high watermark it read; this package only reads the
// iterator, and holds no state and no locks. It also sums a range of
// batch rows (RowStats: what deleting them takes from their objects) and
// walks their batches (Rows), over the coordinator's scans (Scan).
package rowscan

import (
	"bytes"
	"errors"
	"fmt"
	"slices"

	"github.com/cockroachdb/pebble"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/coordinator/layout"
	"github.com/floe-io/floe/kvindex"
)

// Batches reads, from it (positioned anywhere, bounded to req's
// partition from req.Offset to the high watermark), the batches FindBatches
// answers for req, and the object number of each: none at or after limit
// (the high watermark, or the last stable offset for read_committed).
func Batches(it *pebble.Iterator, req coordapi.FindBatchesRequest, limit int64) ([]coordapi.BatchCoord, []uint64, error) {
	var (
		batches []coordapi.BatchCoord
		nums    []uint64
		total   int64
	)
	err := iterCoords(it, it.First(), func(object uint64, bc coordapi.BatchCoord) error {
		switch {
		case bc.LastOffset < req.Offset:
			return nil // before the batch holding Offset, in the first run
		case bc.BaseOffset >= limit:
			return ErrStop
		case bc.Segment:
			// A segment is answered alone: its reader finds the batch
			// holding Offset in it, and the next fetch goes on after.
			if len(batches) == 0 {
				batches, nums = append(batches, bc), append(nums, object)
			}
			return ErrStop
		case len(batches) > 0 && total+int64(bc.ByteLength) > int64(req.MaxBytes):
			return ErrStop
		}
		total += int64(bc.ByteLength)
		batches, nums = append(batches, bc), append(nums, object)
		return nil
	})
	if err != nil && !errors.Is(err, ErrStop) {
		return nil, nil, fmt.Errorf("find batches: %w", err)
	}
	return batches, nums, nil
}

// ResolvePosting finds, with it (over the partition's batch rows), where
// the batch of posting po lives now: the row holding offset at (the
// posting's base offset, or a later one of its batch when the log start or
// the fetch offset cut into it), then the batch in the row holding it. ok is
// false when no batch overlapping the posting's offsets is there any more
// (compaction removed it). It returns the object number of the coordinate.
func ResolvePosting(it *pebble.Iterator, id coordapi.TopicID, partition int32, at int64, po kvindex.Posting) (kb coordapi.KeyBatch, object uint64, ok bool, err error) {
	err = iterCoords(it, it.SeekGE(layout.BatchKey(id, partition, at)), func(obj uint64, bc coordapi.BatchCoord) error {
		switch {
		case bc.LastOffset < at:
			return nil
		case bc.Segment:
			if bc.BaseOffset <= po.LastOffset {
				kb, object, ok = coordapi.KeyBatch{Coord: bc, BaseOffset: po.BaseOffset, LastOffset: po.LastOffset}, obj, true
			}
		case bc.BaseOffset <= po.LastOffset:
			kb, object, ok = coordapi.KeyBatch{Coord: bc, BaseOffset: bc.BaseOffset, LastOffset: bc.LastOffset}, obj, true
		}
		return ErrStop
	})
	if err != nil && !errors.Is(err, ErrStop) {
		return coordapi.KeyBatch{}, 0, false, err
	}
	return kb, object, ok, nil
}

// iterCoords calls fn for every batch of the batch rows it shows, from
// the row valid says it stands on, with the object each row names (a
// segment row: one coordinate with Segment set). fn's error, ErrStop
// included, ends the walk and is returned as it is.
func iterCoords(it *pebble.Iterator, valid bool, fn func(object uint64, bc coordapi.BatchCoord) error) error {
	for ; valid; valid = it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			return fmt.Errorf("read batch row: %w", err)
		}
		if err := rowCoords(it.Key(), v, fn); err != nil {
			return err
		}
	}
	if err := it.Error(); err != nil {
		return fmt.Errorf("iterate batch rows: %w", err)
	}
	return nil
}

// rowCoords calls fn for every batch of the batch row k, v, as iterCoords.
func rowCoords(k, v []byte, fn func(object uint64, bc coordapi.BatchCoord) error) error {
	last, err := layout.DecodeBatchKey(k)
	if err != nil {
		return err
	}
	r, err := layout.NewRunReader(last, v)
	for err == nil {
		bc, more, nerr := r.Next()
		if !more || nerr != nil {
			return nerr
		}
		err = fn(r.Object(), bc)
	}
	return err
}

// WithAbortMarkers merges into resp's batches (nums their objects) the
// abort markers of aborted that fall in the answer's range, in offset
// order.
func WithAbortMarkers(it *pebble.Iterator, req coordapi.FindKeyBatchesRequest, resp coordapi.FindKeyBatchesResponse,
	nums []uint64, aborted []coordapi.AbortedTxn) ([]coordapi.KeyBatch, []uint64, error) {
	var (
		batches  = resp.Batches
		outB     []coordapi.KeyBatch
		outN     []uint64
		i        int
		resolved = map[int64]bool{}
	)
	markers := make([]int64, 0, len(aborted))
	for _, a := range aborted {
		if a.LastOffset >= req.Offset && a.LastOffset < resp.Through && !resolved[a.LastOffset] {
			resolved[a.LastOffset] = true
			markers = append(markers, a.LastOffset)
		}
	}
	slices.Sort(markers)
	for _, m := range markers {
		kb, num, ok, err := ResolvePosting(it, req.TopicID, req.Partition, m, kvindex.Posting{BaseOffset: m, LastOffset: m})
		if err != nil {
			return nil, nil, err
		}
		if !ok {
			continue
		}
		for i < len(batches) && batches[i].BaseOffset < kb.BaseOffset {
			outB, outN = append(outB, batches[i]), append(outN, nums[i])
			i++
		}
		if i < len(batches) && batches[i].BaseOffset == kb.BaseOffset {
			continue // already answered
		}
		outB, outN = append(outB, kb), append(outN, num)
	}
	outB, outN = append(outB, batches[i:]...), append(outN, nums[i:]...)
	return outB, outN, nil
}

// Scan calls fn for every row in [lower, upper), in key order, and
// returns fn's first error as it is: the coordinator's scanRange.
type Scan func(lower, upper []byte, fn func(k, v []byte) error) error

// ErrStop ends a Rows scan early, without error.
var ErrStop = errors.New("coordinator: stop scan")

// Stats is what a range of batch family rows holds, and what deleting
// them takes away.
type Stats struct {
	// Dead is, per object, the summed length of the rows' batches (a
	// segment row: its data length): what deleting them takes from the
	// objects' live bytes.
	Dead map[uint64]int64
	// Batches counts WAL batches, Segments segment rows; Bytes is every
	// row's length, SegBytes the segments' part of it.
	Batches, Segments int64
	Bytes, SegBytes   int64
	// RowBytes is the rows' encoded size, keys and values.
	RowBytes int64
}

// RowStats sums the rows scan shows in [lower, upper).
func RowStats(scan Scan, lower, upper []byte) (Stats, error) {
	rs := Stats{Dead: map[uint64]int64{}}
	var lastRow []byte // the row whose bytes were counted last
	err := Rows(scan, lower, upper, func(k, v []byte, object uint64, bc coordapi.BatchCoord) error {
		if !bytes.Equal(k, lastRow) {
			rs.RowBytes += int64(len(k) + len(v))
			lastRow = append(lastRow[:0], k...)
		}
		n := int64(bc.ByteLength)
		rs.Dead[object] += n
		rs.Bytes += n
		if bc.Segment {
			rs.Segments++
			rs.SegBytes += n
		} else {
			rs.Batches++
		}
		return nil
	})
	return rs, err
}

// Rows calls fn for every batch of the rows scan shows in [lower,
// upper), in offset order, with the object its row names (a segment row:
// one coordinate with Segment set). fn returning ErrStop ends the scan
// without error; k and v are only valid during the call.
func Rows(scan Scan, lower, upper []byte, fn func(k, v []byte, object uint64, bc coordapi.BatchCoord) error) error {
	err := scan(lower, upper, func(k, v []byte) error {
		return rowCoords(k, v, func(object uint64, bc coordapi.BatchCoord) error { return fn(k, v, object, bc) })
	})
	if errors.Is(err, ErrStop) {
		return nil
	}
	return err
}
