package tiered

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/record"
)

// RangeReader reads byte ranges of objects: the broker's chunk cache
// (cache.Cache) implements it. objectSize is the whole object's size, so that
// the reader knows its chunk bounds. Returned bytes must not be modified.
type RangeReader interface {
	GetRange(ctx context.Context, key string, objectSize, offset, length int64) ([]byte, error)
}

// Defaults of ReaderOptions.
const (
	// DefaultIndexCacheBytes is the default ReaderOptions.IndexCacheBytes.
	DefaultIndexCacheBytes = 64 << 20
	// DefaultSuffixBytes is the default ReaderOptions.SuffixBytes.
	DefaultSuffixBytes = 64 << 10
)

// maxWindow bounds one read of batch headers: Reader reads a segment's data
// part a window at a time to frame its batches, rather than a header at a time.
const maxWindow = 64 << 10

// ErrNotSegment reports a coordinate handed to Reader without Segment set.
var ErrNotSegment = errors.New("tiered: not a segment coordinate")

// ReaderOptions configure a Reader. The zero value is the default.
type ReaderOptions struct {
	// IndexCacheBytes bounds the memory taken by the parsed indexes Reader keeps,
	// least recently used first out. A segment of 128 MiB with the default index
	// interval has an index of about 1.3 MiB parsed. Default: 64 MiB.
	IndexCacheBytes int64
	// SuffixBytes is how much of an object's end the first read of a segment's
	// trailer and indexes fetches when the coordinate does not tell where its
	// indexes start; indexes larger than that take a second read. At least
	// TrailerSize. Default: 64 KiB.
	SuffixBytes int64
}

// Reader reads segment objects through a RangeReader: it finds batches in them
// by offset and by timestamp, and answers them as ordinary batch coordinates. It
// loads each segment's trailer and indexes once (concurrent loads of one
// segment are shared) and keeps them in a byte-bounded LRU cache; segment
// objects are immutable, so cached indexes are never invalidated. Batch headers
// are read through the RangeReader, whose cache makes repeated reads cheap. A
// Reader is safe for concurrent use.
type Reader struct {
	rr   RangeReader
	opts ReaderOptions
	mu   struct {
		sync.Mutex
		lru     *list.List // of *indexEntry, most recently used first
		entries map[string]*list.Element
		bytes   int64
		loads   map[string]*indexLoad
	}
}

// indexEntry is one cached Index.
type indexEntry struct {
	key  string
	idx  *Index
	size int64
}

// indexLoad is one index load in progress, which concurrent readers of the same
// segment wait for instead of reading it again.
type indexLoad struct {
	done chan struct{} // closed once idx/err are set
	idx  *Index
	err  error
	// retry is set when the load failed because its caller's context ended:
	// a waiter whose context is still live loads again.
	retry bool
}

// NewReader returns a Reader of segments read through rr.
func NewReader(rr RangeReader, opts ReaderOptions) *Reader {
	if opts.IndexCacheBytes <= 0 {
		opts.IndexCacheBytes = DefaultIndexCacheBytes
	}
	if opts.SuffixBytes <= 0 {
		opts.SuffixBytes = DefaultSuffixBytes
	}
	opts.SuffixBytes = max(opts.SuffixBytes, TrailerSize)
	r := &Reader{rr: rr, opts: opts}
	r.mu.lru = list.New()
	r.mu.entries = make(map[string]*list.Element)
	r.mu.loads = make(map[string]*indexLoad)
	return r
}

// Index returns the parsed trailer and indexes of the segment object key, of
// objectSize bytes, from the cache or read with one suffix read of
// ReaderOptions.SuffixBytes (two when its indexes are larger).
func (r *Reader) Index(ctx context.Context, key string, objectSize int64) (*Index, error) {
	return r.index(ctx, key, objectSize, -1)
}

// segmentIndex returns the index of the segment seg names, checking that the
// coordinate agrees with it. seg.ByteLength, the data length, tells where the
// indexes start: they are read in one exact suffix read.
func (r *Reader) segmentIndex(ctx context.Context, seg coordapi.BatchCoord) (*Index, error) {
	if !seg.Segment {
		return nil, fmt.Errorf("%w: %s at %d", ErrNotSegment, seg.ObjectKey, seg.ByteOffset)
	}
	idx, err := r.index(ctx, seg.ObjectKey, seg.ObjectSize, int64(seg.ByteLength))
	if err != nil {
		return nil, err
	}
	if seg.ByteOffset != 0 || int64(seg.ByteLength) != int64(idx.Trailer.DataLength) {
		return nil, fmt.Errorf("segment %s: coordinate places its data at %d+%d, the trailer at 0+%d",
			seg.ObjectKey, seg.ByteOffset, seg.ByteLength, idx.Trailer.DataLength)
	}
	return idx, nil
}

// index returns key's Index from the cache, or loads it, sharing the load with
// concurrent callers. dataLength, when positive, is where the indexes start.
func (r *Reader) index(ctx context.Context, key string, objectSize, dataLength int64) (*Index, error) {
	for {
		r.mu.Lock()
		if e, ok := r.mu.entries[key]; ok {
			r.mu.lru.MoveToFront(e)
			idx := e.Value.(*indexEntry).idx
			r.mu.Unlock()
			return idx, nil
		}
		if l, ok := r.mu.loads[key]; ok {
			r.mu.Unlock()
			select {
			case <-l.done:
			case <-ctx.Done():
				return nil, fmt.Errorf("segment %s: wait for its index: %w", key, ctx.Err())
			}
			if l.retry && ctx.Err() == nil {
				continue // the loader gave up; load under our context
			}
			return l.idx, l.err
		}
		l := &indexLoad{done: make(chan struct{})}
		r.mu.loads[key] = l
		r.mu.Unlock()
		r.load(ctx, key, objectSize, dataLength, l)
		return l.idx, l.err
	}
}

// load runs l, caches its index, and releases its waiters.
func (r *Reader) load(ctx context.Context, key string, objectSize, dataLength int64, l *indexLoad) {
	defer func() {
		r.mu.Lock()
		delete(r.mu.loads, key)
		if l.err == nil && l.idx != nil {
			r.insertLocked(key, l.idx)
		}
		r.mu.Unlock()
		close(l.done)
	}()
	l.idx, l.err = r.readIndex(ctx, key, objectSize, dataLength)
	if l.err != nil {
		l.idx = nil
		l.retry = ctx.Err() != nil
	}
}

// insertLocked caches idx under key and evicts the least recently used indexes
// past the byte bound. An index larger than the whole bound is not cached.
// r.mu must be held.
func (r *Reader) insertLocked(key string, idx *Index) {
	e := &indexEntry{key: key, idx: idx, size: indexSize(key, idx)}
	if e.size > r.opts.IndexCacheBytes {
		return
	}
	if old, ok := r.mu.entries[key]; ok { // cannot happen: loads are shared
		r.removeLocked(old)
	}
	r.mu.entries[key] = r.mu.lru.PushFront(e)
	r.mu.bytes += e.size
	for r.mu.bytes > r.opts.IndexCacheBytes {
		r.removeLocked(r.mu.lru.Back())
	}
}

// removeLocked drops one cached index. r.mu must be held.
func (r *Reader) removeLocked(el *list.Element) {
	e := r.mu.lru.Remove(el).(*indexEntry)
	delete(r.mu.entries, e.key)
	r.mu.bytes -= e.size
}

// indexSize is the memory a cached index takes, as the cache counts it.
func indexSize(key string, idx *Index) int64 {
	const overhead = 256
	return overhead + int64(len(key)) + 16*int64(cap(idx.Offsets)) + 16*int64(cap(idx.Times)) + 8*int64(cap(idx.timePos))
}

// cachedIndexes returns the number of cached indexes and their bytes.
func (r *Reader) cachedIndexes() (n int, bytes int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.mu.lru.Len(), r.mu.bytes
}

// readIndex reads and parses key's trailer and indexes: one read of the object's
// suffix from dataLength when it is given, else of SuffixBytes, and a second read
// of the rest of the indexes when they start before that suffix.
func (r *Reader) readIndex(ctx context.Context, key string, objectSize, dataLength int64) (*Index, error) {
	if objectSize < TrailerSize {
		return nil, fmt.Errorf("segment %s: %w: %d bytes, too small for a trailer", key, ErrCorrupt, objectSize)
	}
	start := max(0, objectSize-r.opts.SuffixBytes)
	if dataLength > 0 && dataLength <= objectSize-TrailerSize {
		start = dataLength
	}
	tail, err := r.read(ctx, key, objectSize, start, objectSize-start)
	if err != nil {
		return nil, err
	}
	t, err := ParseTrailer(tail)
	if err != nil {
		return nil, fmt.Errorf("segment %s: %w", key, err)
	}
	if t.Size() != objectSize {
		return nil, fmt.Errorf("segment %s: %w: trailer says %d bytes, the object has %d", key, ErrCorrupt, t.Size(), objectSize)
	}
	b := tail
	if ipos := t.IndexPos(); ipos >= start {
		b = tail[ipos-start:]
	} else {
		head, err := r.read(ctx, key, objectSize, ipos, start-ipos)
		if err != nil {
			return nil, err
		}
		b = make([]byte, 0, objectSize-ipos)
		b = append(append(b, head...), tail...)
	}
	idx, err := ParseIndexes(b, t)
	if err != nil {
		return nil, fmt.Errorf("segment %s: %w", key, err)
	}
	return idx, nil
}

// read reads length bytes of key at offset, all of them.
func (r *Reader) read(ctx context.Context, key string, objectSize, offset, length int64) ([]byte, error) {
	b, err := r.rr.GetRange(ctx, key, objectSize, offset, length)
	if err == nil && int64(len(b)) != length {
		err = fmt.Errorf("got %d of %d bytes", len(b), length)
	}
	if err != nil {
		return nil, fmt.Errorf("segment %s: read %d bytes at %d: %w", key, length, offset, err)
	}
	return b, nil
}

// Batches answers FindBatches inside segment seg, a coordinate with Segment set:
// the batches from the one holding offset (the first batch after it when offset
// falls in a gap, or the first batch when it is below the segment), the first
// whole, then following ones while their summed length stays within maxBytes.
// Each is an ordinary coordinate: ObjectKey and ObjectSize the segment's,
// ByteOffset and ByteLength the batch's place in the object, offsets and
// MaxTimestamp from its header, LogAppendTime false (segment batches are
// stamped already). An offset past the segment's last is an error, and so is a
// corrupt segment (ErrCorrupt).
func (r *Reader) Batches(ctx context.Context, seg coordapi.BatchCoord, offset int64, maxBytes int32) ([]coordapi.BatchCoord, error) {
	idx, err := r.segmentIndex(ctx, seg)
	if err != nil {
		return nil, err
	}
	t := &idx.Trailer
	if offset > t.LastOffset {
		return nil, fmt.Errorf("segment %s holds offsets %d-%d, not %d", seg.ObjectKey, t.BaseOffset, t.LastOffset, offset)
	}
	w := r.walker(ctx, seg, idx)
	e, next := idx.entry(offset)
	pos := e.Position
	// Find the batch holding offset, or the first after it: at the latest,
	// the next index entry's, whose base offset is above offset.
	h, err := w.header(pos, next.Position-pos, e.Offset)
	for err == nil && w.last < offset {
		pos += int64(h.Size())
		switch {
		case pos == next.Position:
			h, err = w.header(pos, record.HeaderSize, next.Offset)
		case pos > next.Position:
			err = fmt.Errorf("segment %s: %w: no batch starts at offset index position %d", seg.ObjectKey, ErrCorrupt, next.Position)
		default:
			h, err = w.header(pos, next.Position-pos, -1)
		}
	}
	if err != nil {
		return nil, err
	}
	total := int64(h.Size())
	// As many more as the budget would hold of batches this size, within reason.
	out := make([]coordapi.BatchCoord, 1, 1+min(max(int64(maxBytes)-total, 0)/total, 1024))
	out[0] = w.coord(pos, &h)
	for pos += int64(h.Size()); pos < w.dataLen; pos += int64(h.Size()) {
		left := int64(maxBytes) - total
		if left < record.HeaderSize {
			break // no batch fits
		}
		if h, err = w.header(pos, left+record.HeaderSize, -1); err != nil {
			return nil, err
		}
		if int64(h.Size()) > left {
			break
		}
		out = append(out, w.coord(pos, &h))
		total += int64(h.Size())
	}
	return out, nil
}

// BatchAtTimestamp answers a ListOffsets search by timestamp inside segment
// seg, a coordinate with Segment set: the first batch that holds an offset at
// or after from and whose MaxTimestamp is at least ts, as Batches answers
// batches. The time index says where to start; the batch headers from there
// say which batch. ok is false when no batch qualifies. A corrupt segment is
// an error (ErrCorrupt).
func (r *Reader) BatchAtTimestamp(ctx context.Context, seg coordapi.BatchCoord, from, ts int64) (bc coordapi.BatchCoord, ok bool, err error) {
	idx, err := r.segmentIndex(ctx, seg)
	if err != nil {
		return coordapi.BatchCoord{}, false, err
	}
	t := &idx.Trailer
	if ts > t.MaxTimestamp || from > t.LastOffset {
		return coordapi.BatchCoord{}, false, nil
	}
	// Start at the later of where the time index and the offset index say
	// the answer can start: both are batch starts of offset index entries.
	tOff, tPos, _ := idx.FindTimestamp(ts)
	e, _ := idx.entry(from)
	pos, first := e.Position, e.Offset
	if tPos > pos {
		pos, first = tPos, tOff
	}
	// The answer starts at or before the batch of the first time entry at or
	// above ts, when there is one.
	bound := int64(t.DataLength)
	if i := sort.Search(len(idx.Times), func(i int) bool { return idx.Times[i].Timestamp >= ts }); i < len(idx.Times) {
		bound = idx.timePos[i] + record.HeaderSize
	}
	w := r.walker(ctx, seg, idx)
	for pos < w.dataLen {
		h, err := w.header(pos, bound-pos, first)
		if err != nil {
			return coordapi.BatchCoord{}, false, err
		}
		if w.last >= from && h.MaxTimestamp >= ts {
			return w.coord(pos, &h), true, nil
		}
		pos += int64(h.Size())
		first = -1
	}
	return coordapi.BatchCoord{}, false, nil
}

// entry returns the offset index entry to start reading at for offset (as
// Find), and the entry after it: after the last, one at the end of the data
// part with offset -1.
func (x *Index) entry(offset int64) (cur, next OffsetEntry) {
	i := sort.Search(len(x.Offsets), func(i int) bool { return x.Offsets[i].Offset > offset })
	c := max(i-1, 0)
	next = OffsetEntry{Offset: -1, Position: int64(x.Trailer.DataLength)}
	if c+1 < len(x.Offsets) {
		next = x.Offsets[c+1]
	}
	return x.Offsets[c], next
}

// walker frames the batches of one segment's data part from its headers, read
// through the RangeReader a window at a time, checking them as it goes.
type walker struct {
	r       *Reader
	ctx     context.Context
	seg     coordapi.BatchCoord
	idx     *Index
	dataLen int64
	// win holds data bytes from winPos on, the last window read.
	win    []byte
	winPos int64
	// last is the last offset of the batch header last returned; the segment's
	// base offset minus one before the first.
	last int64
}

func (r *Reader) walker(ctx context.Context, seg coordapi.BatchCoord, idx *Index) *walker {
	return &walker{r: r, ctx: ctx, seg: seg, idx: idx, dataLen: int64(idx.Trailer.DataLength), last: idx.Trailer.BaseOffset - 1}
}

// header returns the header of the batch at data position pos, reading a window
// of up to want bytes (within maxWindow and the data part, at least a header)
// when the window held does not cover it. base, when not negative, is the base
// offset the batch must have (an offset index entry's); in any case its base
// offset must be above the last offset of the header returned before (the
// batch before it in the walk).
func (w *walker) header(pos, want, base int64) (record.Header, error) {
	corrupt := func(format string, args ...any) error {
		return fmt.Errorf("segment %s: %w: batch at %d: %s", w.seg.ObjectKey, ErrCorrupt, pos, fmt.Sprintf(format, args...))
	}
	if pos < 0 || pos+record.HeaderSize > w.dataLen {
		return record.Header{}, corrupt("header runs past the data part (%d bytes)", w.dataLen)
	}
	if pos < w.winPos || pos+record.HeaderSize > w.winPos+int64(len(w.win)) {
		n := min(max(want, record.HeaderSize), maxWindow, w.dataLen-pos)
		b, err := w.r.read(w.ctx, w.seg.ObjectKey, w.seg.ObjectSize, pos, n)
		if err != nil {
			return record.Header{}, err
		}
		w.win, w.winPos = b, pos
	}
	h, err := record.ParseHeader(w.win[pos-w.winPos:])
	if err != nil {
		return record.Header{}, corrupt("%v", err)
	}
	last := h.BaseOffset + int64(h.LastOffsetDelta)
	switch {
	case int64(h.Size()) > w.dataLen-pos:
		return record.Header{}, corrupt("%d bytes run past the data part (%d bytes)", h.Size(), w.dataLen)
	case base >= 0 && h.BaseOffset != base:
		return record.Header{}, corrupt("base offset %d, the offset index says %d", h.BaseOffset, base)
	case h.BaseOffset <= w.last:
		return record.Header{}, corrupt("base offset %d does not follow the last offset %d", h.BaseOffset, w.last)
	case h.LastOffsetDelta < 0 || last < h.BaseOffset || last > w.idx.Trailer.LastOffset:
		return record.Header{}, corrupt("offsets %d-%d outside the segment's %d-%d", h.BaseOffset, last, w.idx.Trailer.BaseOffset, w.idx.Trailer.LastOffset)
	case pos+int64(h.Size()) == w.dataLen && last != w.idx.Trailer.LastOffset:
		return record.Header{}, corrupt("the last batch ends at offset %d, the trailer says %d", last, w.idx.Trailer.LastOffset)
	}
	w.last = last
	return h, nil
}

// coord returns the coordinate of the batch at pos with header h.
func (w *walker) coord(pos int64, h *record.Header) coordapi.BatchCoord {
	return coordapi.BatchCoord{
		ObjectKey:    w.seg.ObjectKey,
		ObjectSize:   w.seg.ObjectSize,
		ByteOffset:   pos,
		ByteLength:   int32(h.Size()),
		BaseOffset:   h.BaseOffset,
		LastOffset:   h.BaseOffset + int64(h.LastOffsetDelta),
		MaxTimestamp: h.MaxTimestamp,
	}
}
