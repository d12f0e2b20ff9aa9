package tiered

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/floe-io/floe/record"
)

// Options configure a Writer. The zero value is the default.
type Options struct {
	// IndexIntervalBytes is the least number of data bytes between two offset
	// index entries, Kafka's index.interval.bytes. Default: 4096.
	IndexIntervalBytes int
	// SizeHint is the expected size of the data part, to size the buffer once.
	// Default: 0 (the buffer grows as batches arrive).
	SizeHint int
}

// Info describes a finished segment object.
type Info struct {
	// BaseOffset is the segment's base offset; LastOffset the last offset of its
	// last batch.
	BaseOffset, LastOffset int64
	// MaxTimestamp is the largest batch MaxTimestamp, -1 when none has one.
	MaxTimestamp int64
	// Size is the size of the whole object in bytes.
	Size int64
	// DataLength is the size of the data part (the batches).
	DataLength int64
	// BatchCount is the number of batches.
	BatchCount int
}

// Writer builds one segment object. NewWriter's builds it in memory: one
// buffer holding the data part, to which Finish appends the indexes and the
// trailer. NewStreamWriter's writes it to an io.Writer as it goes (an
// objectstore.Upload): each batch as it is appended, then Close writes the
// indexes and the trailer, so that it holds the indexes (at most 20 bytes
// per batch) and a copy of one LogAppendTime batch, never the data part.
// Both write the same bytes for the same batches. A Writer is not safe for
// concurrent use.
type Writer struct {
	base     int64
	interval int
	buf      []byte
	offIdx   []byte
	timeIdx  []byte

	// Streaming (NewStreamWriter): out takes the object's bytes, dataLen
	// counts the data part written, scratch holds a batch header (or a
	// LogAppendTime batch) being patched, and err is a failed write of
	// out, after which the Writer refuses everything.
	out     io.Writer
	dataLen int64
	scratch []byte
	err     error

	batches      int
	last         int64 // last offset of the last batch; base-1 before the first
	maxTimestamp int64
	lastIndexed  int   // data position of the last offset index entry
	lastTimeTS   int64 // timestamp of the last time index entry
	finished     bool
}

// NewWriter returns a Writer of a segment whose base offset is baseOffset.
func NewWriter(baseOffset int64, opts Options) (*Writer, error) {
	if baseOffset < 0 {
		return nil, fmt.Errorf("tiered: negative base offset %d", baseOffset)
	}
	if opts.IndexIntervalBytes < 0 || opts.SizeHint < 0 {
		return nil, errors.New("tiered: negative IndexIntervalBytes or SizeHint")
	}
	if opts.IndexIntervalBytes == 0 {
		opts.IndexIntervalBytes = DefaultIndexIntervalBytes
	}
	return &Writer{
		base:         baseOffset,
		interval:     opts.IndexIntervalBytes,
		buf:          make([]byte, 0, opts.SizeHint),
		last:         baseOffset - 1,
		maxTimestamp: -1,
		lastTimeTS:   -1,
	}, nil
}

// NewStreamWriter returns a Writer of a segment whose base offset is
// baseOffset that writes the object to out as it goes (Options.SizeHint is
// not used): Append writes each batch, Close the indexes and the trailer.
// The caller commits or drops what out received; after a failed write of
// out the Writer fails every call.
func NewStreamWriter(baseOffset int64, opts Options, out io.Writer) (*Writer, error) {
	if out == nil {
		return nil, errors.New("tiered: NewStreamWriter needs an output")
	}
	opts.SizeHint = 0
	w, err := NewWriter(baseOffset, opts)
	if err != nil {
		return nil, err
	}
	w.out = out
	return w, nil
}

// Append appends a copy of batch, a whole magic v2 batch that passes
// record.ValidateStored (a compacted batch may have gaps, or no records), with its
// base offset set to baseOffset and its partition leader
// epoch to leaderEpoch; neither changes its CRC. Offsets must strictly increase:
// baseOffset must be above the last offset so far (the segment's base offset for
// the first batch), gaps being allowed for compacted segments. A refused batch
// leaves the Writer as it was.
func (w *Writer) Append(batch []byte, baseOffset int64, leaderEpoch int32) error {
	return w.append(batch, baseOffset, leaderEpoch, -1)
}

// AppendLogAppendTime is Append for a batch of a LogAppendTime topic: the
// copy in the segment is also stamped with append time ts (record.
// SetLogAppendTime), so that the batch is copied and its CRC recomputed
// once, in the segment's buffer.
func (w *Writer) AppendLogAppendTime(batch []byte, baseOffset int64, leaderEpoch int32, ts int64) error {
	if ts < 0 {
		return fmt.Errorf("%w: log append time %d", ErrInvalidBatch, ts)
	}
	return w.append(batch, baseOffset, leaderEpoch, ts)
}

// append is Append, stamping the copy with append time ts when ts >= 0.
func (w *Writer) append(batch []byte, baseOffset int64, leaderEpoch int32, ts int64) error {
	if w.finished {
		return errors.New("tiered: Append after Finish")
	}
	if w.err != nil {
		return w.err
	}
	h, err := record.ValidateStored(batch)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidBatch, err)
	}
	if baseOffset <= w.last {
		return fmt.Errorf("%w: base offset %d is not above the last offset %d", ErrInvalidBatch, baseOffset, w.last)
	}
	last := baseOffset + int64(h.LastOffsetDelta)
	if last < baseOffset || last-w.base > math.MaxUint32 {
		return fmt.Errorf("%w: offsets %d-%d do not fit a segment based at %d", ErrInvalidBatch, baseOffset, last, w.base)
	}
	pos := int(w.dataLength())
	if uint64(pos)+uint64(len(batch)) > maxDataLength {
		return fmt.Errorf("%w: segment data would exceed %d bytes", ErrInvalidBatch, uint64(maxDataLength))
	}
	if w.out != nil {
		if err := w.stream(batch, baseOffset, leaderEpoch, ts); err != nil {
			return err
		}
		if ts >= 0 {
			h.MaxTimestamp = ts
		}
	} else {
		if need := len(w.buf) + len(batch); need > cap(w.buf) {
			// Double, as append does only for small slices: a large segment
			// grown by append's smaller steps would be copied many more times.
			grown := make([]byte, len(w.buf), max(2*cap(w.buf), need))
			copy(grown, w.buf)
			w.buf = grown
		}
		w.buf = append(w.buf, batch...)
		b := w.buf[pos:]
		record.SetBaseOffset(b, baseOffset)
		record.SetPartitionLeaderEpoch(b, leaderEpoch)
		if ts >= 0 {
			record.SetLogAppendTime(b, ts)
			h.MaxTimestamp = ts
		}
	}

	rel := uint32(baseOffset - w.base)
	if w.batches == 0 || pos-w.lastIndexed >= w.interval {
		w.offIdx = binary.BigEndian.AppendUint32(w.offIdx, rel)
		w.offIdx = binary.BigEndian.AppendUint32(w.offIdx, uint32(pos))
		w.lastIndexed = pos
	}
	w.maxTimestamp = max(w.maxTimestamp, h.MaxTimestamp)
	if w.lastIndexed == pos && w.maxTimestamp > w.lastTimeTS {
		w.timeIdx = binary.BigEndian.AppendUint64(w.timeIdx, uint64(w.maxTimestamp))
		w.timeIdx = binary.BigEndian.AppendUint32(w.timeIdx, rel)
		w.lastTimeTS = w.maxTimestamp
	}
	w.batches++
	w.last = last
	return nil
}

// stream writes batch to w.out with its base offset and leader epoch, and
// its append time ts when ts >= 0, patched in a copy: of the header alone
// (the rest is written from batch) unless the stamp changes the CRC.
func (w *Writer) stream(batch []byte, baseOffset int64, leaderEpoch int32, ts int64) error {
	head := batch
	if ts < 0 {
		head = batch[:record.HeaderSize]
	}
	w.scratch = append(w.scratch[:0], head...)
	record.SetBaseOffset(w.scratch, baseOffset)
	record.SetPartitionLeaderEpoch(w.scratch, leaderEpoch)
	if ts >= 0 {
		record.SetLogAppendTime(w.scratch, ts)
	}
	err := w.write(w.scratch)
	if err == nil && ts < 0 {
		err = w.write(batch[record.HeaderSize:])
	}
	if cap(w.scratch) > maxKeptScratch {
		w.scratch = nil // a large LogAppendTime batch's copy is not kept
	}
	return err
}

// maxKeptScratch is the largest batch copy a streaming Writer keeps for the
// next batch.
const maxKeptScratch = 1 << 20

// write writes b to w.out; a failure is kept in w.err.
func (w *Writer) write(b []byte) error {
	n, err := w.out.Write(b)
	w.dataLen += int64(n)
	if err == nil && n < len(b) {
		err = io.ErrShortWrite
	}
	if err != nil {
		w.err = fmt.Errorf("tiered: write segment: %w", err)
		return w.err
	}
	return nil
}

// dataLength returns the size of the data part so far.
func (w *Writer) dataLength() int64 {
	if w.out != nil {
		return w.dataLen
	}
	return int64(len(w.buf))
}

// Finish appends the indexes and the trailer and returns the whole object, which
// the Writer no longer touches, and its Info. A segment needs at least one batch.
// A streaming Writer (NewStreamWriter) is finished with Close instead.
func (w *Writer) Finish() ([]byte, Info, error) {
	if w.out != nil {
		return nil, Info{}, errors.New("tiered: Finish of a streaming Writer (Close finishes it)")
	}
	tail, info, err := w.finish()
	if err != nil {
		return nil, Info{}, err
	}
	out := w.buf
	if cap(out)-len(out) < len(tail) {
		out = append(make([]byte, 0, len(out)+len(tail)), out...)
	}
	out = append(out, tail...)
	w.buf = nil
	return out, info, nil
}

// Close writes the indexes and the trailer of a streaming Writer's segment
// to its output and returns the segment's Info. A segment needs at least
// one batch. The caller then commits the output.
func (w *Writer) Close() (Info, error) {
	if w.out == nil {
		return Info{}, errors.New("tiered: Close of an in-memory Writer (Finish finishes it)")
	}
	if w.err != nil {
		return Info{}, w.err
	}
	tail, info, err := w.finish()
	if err != nil {
		return Info{}, err
	}
	if err := w.write(tail); err != nil {
		return Info{}, err
	}
	w.scratch = nil
	return info, nil
}

// finish ends the Writer and returns what follows the data part (both
// indexes and the trailer) and the segment's Info.
func (w *Writer) finish() ([]byte, Info, error) {
	if w.finished {
		return nil, Info{}, errors.New("tiered: Finish called twice")
	}
	if w.batches == 0 {
		return nil, Info{}, errors.New("tiered: a segment needs at least one batch")
	}
	w.finished = true
	dataLen := uint64(w.dataLength())
	t := Trailer{
		Version:        Version,
		BaseOffset:     w.base,
		LastOffset:     w.last,
		MaxTimestamp:   w.maxTimestamp,
		BatchCount:     uint64(w.batches),
		DataLength:     dataLen,
		OffsetIndexPos: dataLen,
		OffsetIndexLen: uint64(len(w.offIdx)),
		TimeIndexPos:   dataLen + uint64(len(w.offIdx)),
		TimeIndexLen:   uint64(len(w.timeIdx)),
	}
	tail := make([]byte, 0, len(w.offIdx)+len(w.timeIdx)+TrailerSize)
	tail = append(tail, w.offIdx...)
	tail = append(tail, w.timeIdx...)
	tpos := len(tail)
	tail = appendTrailer(tail, &t)
	t.CRC = trailerCRC(tail[:tpos], tail[tpos:])
	binary.BigEndian.PutUint32(tail[tpos+offCRC:], t.CRC)
	w.offIdx, w.timeIdx = nil, nil
	return tail, Info{
		BaseOffset:   t.BaseOffset,
		LastOffset:   t.LastOffset,
		MaxTimestamp: t.MaxTimestamp,
		Size:         int64(dataLen) + int64(len(tail)),
		DataLength:   int64(dataLen),
		BatchCount:   w.batches,
	}, nil
}
