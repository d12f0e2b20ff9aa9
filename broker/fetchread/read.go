package fetchread

import (
	"context"
	"errors"
	"fmt"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/objectstore"
	"github.com/floe-io/floe/record"
)

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

// Read reads every part's planned batches (Plan), all at once, up to
// Options.Concurrency ranges in flight, and sets each part's records.
// A range that fails cuts its partition's records short before it; when
// that leaves nothing, the partition answers the error. It returns the
// bytes of records read, and whether some partition failed.
//
// With bufs, the records are read into buffers of the Reader's pool, each
// appended to *bufs: the caller gives them back once the answer holding
// them is encoded, and must not use the answer's records after that.
// Without, they are the answer's own.
func (rd *Reader) Read(ctx context.Context, parts []*Part, bufs *[][]byte) (int, bool) {
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
			out[pi] = rd.bufs.Get(size)
			*bufs = append(*bufs, out[pi])
		} else {
			out[pi] = make([]byte, size)
		}
	}
	sparse := sparseParts(parts, reads, rd.chunkBytes())
	parallel(len(reads), rd.opts.Concurrency, func(i int) {
		r := &reads[i]
		bc := parts[r.part].batches[r.first]
		var (
			data []byte
			err  error
		)
		if d, ok := rd.directRead(parts[r.part], sparse[r.part], r.length); ok {
			data, err = d.GetRangeDirect(ctx, bc.ObjectKey, bc.ObjectSize, bc.ByteOffset, int64(r.length))
		} else {
			data, err = rd.ranges.GetRange(ctx, bc.ObjectKey, bc.ObjectSize, bc.ByteOffset, int64(r.length))
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
			rd.tails.Forget(parts[r.part].Topic, parts[r.part].Partition)
		}
		if r.first == 0 {
			parts[r.part].Resp.ErrorCode = coordapi.ErrorCode(r.err)
			failed = true
		}
	}
	total := 0
	for pi, p := range parts {
		if cut[pi] == 0 {
			if p.posted && len(p.batches) == 0 && p.code == 0 && p.Resp.ErrorCode == 0 {
				// No batch of the key in what the postings covered: a bare
				// header moves the consumer past it.
				p.Resp.RecordBatches = append(p.Resp.RecordBatches, viewTail(p, 0)...)
				total += len(p.Resp.RecordBatches)
			}
			continue
		}
		records, pos := out[pi], 0
		for _, bc := range p.batches[:cut[pi]] {
			batch := records[pos : pos+int(bc.ByteLength)]
			pos += int(bc.ByteLength)
			record.SetBaseOffset(batch, bc.BaseOffset)
			record.SetPartitionLeaderEpoch(batch, LeaderEpoch)
			if bc.LogAppendTime {
				record.SetLogAppendTime(batch, bc.MaxTimestamp)
			}
		}
		// Answer what was read; the client fetches on from there.
		p.Resp.RecordBatches = records[:pos]
		if p.ViewKey != nil {
			p.Resp.RecordBatches = filterView(records[:pos], p.ViewKey)
			if tail := viewTail(p, cut[pi]); tail != nil {
				p.Resp.RecordBatches = append(p.Resp.RecordBatches[:len(p.Resp.RecordBatches):len(p.Resp.RecordBatches)], tail...)
			}
		}
		total += len(p.Resp.RecordBatches)
	}
	return total, failed
}

// ReadRange reads length bytes at offset of object key (objectSize bytes
// long): with an exact read that loads no cache chunk when the reader has
// them and the range is small against a chunk (under a quarter of one),
// else through the cache. GET /kv reads its batches so: a random key's
// batch is rarely read again, and its whole chunk is not worth loading.
func (rd *Reader) ReadRange(ctx context.Context, key string, objectSize, offset, length int64) ([]byte, error) {
	if d, ok := rd.ranges.(DirectRangeReader); ok && length*directReadBelow <= d.ChunkBytes() {
		return d.GetRangeDirect(ctx, key, objectSize, offset, length)
	}
	return rd.ranges.GetRange(ctx, key, objectSize, offset, length)
}
