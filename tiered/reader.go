package tiered

import (
	"encoding/binary"
	"fmt"
	"iter"
	"sort"

	"github.com/floe-io/floe/record"
)

// OffsetEntry is one offset index entry, with its offset made absolute.
type OffsetEntry struct {
	// Offset is the base offset of the batch the entry points at.
	Offset int64
	// Position is the byte position of that batch in the data part.
	Position int64
}

// TimeEntry is one time index entry, with its offset made absolute.
type TimeEntry struct {
	// Timestamp is the largest batch MaxTimestamp up to and including the batch
	// at Offset.
	Timestamp int64
	// Offset is the base offset of that batch, which an offset index entry points at.
	Offset int64
}

// Index is a segment's parsed trailer and indexes, what a reader caches per
// segment. It is immutable and safe for concurrent use.
type Index struct {
	// Trailer is the segment's trailer.
	Trailer Trailer
	// Offsets is the offset index, in offset order.
	Offsets []OffsetEntry
	// Times is the time index, in offset (and timestamp) order.
	Times []TimeEntry
	// timePos[i] is the data position of Times[i]'s batch.
	timePos []int64
}

// ParseIndexes parses and checks the indexes of the segment whose trailer is t
// (from ParseTrailer). b holds the object's bytes from t.IndexPos() to its end:
// both indexes and the trailer. It checks the CRC, that b's trailer is t, and that
// entries are in range and strictly increase.
func ParseIndexes(b []byte, t Trailer) (*Index, error) {
	if err := t.check(); err != nil {
		return nil, err
	}
	if t.Version != Version {
		return nil, fmt.Errorf("%w: version %d", ErrUnsupportedVersion, t.Version)
	}
	ilen := t.OffsetIndexLen + t.TimeIndexLen
	if uint64(len(b)) != ilen+TrailerSize {
		return nil, corruptf("%d index and trailer bytes, trailer says %d", len(b), ilen+TrailerSize)
	}
	tb := b[ilen:]
	if got, err := ParseTrailer(tb); err != nil {
		return nil, err
	} else if got != t {
		return nil, corruptf("trailer differs from the one given")
	}
	if crc := trailerCRC(b[:ilen], tb); crc != t.CRC {
		return nil, corruptf("crc %#08x, computed %#08x", t.CRC, crc)
	}

	idx := &Index{
		Trailer: t,
		Offsets: make([]OffsetEntry, t.OffsetIndexLen/OffsetEntrySize),
		Times:   make([]TimeEntry, t.TimeIndexLen/TimeEntrySize),
	}
	span := uint64(t.LastOffset - t.BaseOffset)
	ob := b[:t.OffsetIndexLen]
	for i := range idx.Offsets {
		e := ob[i*OffsetEntrySize:]
		rel, pos := binary.BigEndian.Uint32(e), binary.BigEndian.Uint32(e[4:])
		switch {
		case uint64(rel) > span:
			return nil, corruptf("offset index entry %d: relative offset %d past the last %d", i, rel, span)
		case uint64(pos) >= t.DataLength:
			return nil, corruptf("offset index entry %d: position %d past the data (%d bytes)", i, pos, t.DataLength)
		case i == 0 && pos != 0:
			return nil, corruptf("offset index entry 0: position %d, want 0", pos)
		case i > 0 && (int64(rel) <= idx.Offsets[i-1].Offset-t.BaseOffset || int64(pos) <= idx.Offsets[i-1].Position):
			return nil, corruptf("offset index entry %d (%d, %d) does not follow the one before", i, rel, pos)
		}
		idx.Offsets[i] = OffsetEntry{Offset: t.BaseOffset + int64(rel), Position: int64(pos)}
	}
	tib := b[t.OffsetIndexLen:ilen]
	idx.timePos = make([]int64, len(idx.Times))
	j := 0 // the offset index entry of the time entry
	for i := range idx.Times {
		e := tib[i*TimeEntrySize:]
		ts, rel := int64(binary.BigEndian.Uint64(e)), binary.BigEndian.Uint32(e[8:])
		off := t.BaseOffset + int64(rel)
		for j < len(idx.Offsets) && idx.Offsets[j].Offset < off {
			j++
		}
		switch {
		case ts < 0 || ts > t.MaxTimestamp:
			return nil, corruptf("time index entry %d: timestamp %d outside 0-%d", i, ts, t.MaxTimestamp)
		case j == len(idx.Offsets) || idx.Offsets[j].Offset != off:
			return nil, corruptf("time index entry %d: offset %d has no offset index entry", i, off)
		case i > 0 && (ts <= idx.Times[i-1].Timestamp || off <= idx.Times[i-1].Offset):
			return nil, corruptf("time index entry %d (%d, %d) does not follow the one before", i, ts, off)
		}
		idx.Times[i] = TimeEntry{Timestamp: ts, Offset: off}
		idx.timePos[i] = idx.Offsets[j].Position
	}
	return idx, nil
}

// Find returns the data position to start reading at for offset: that of the
// greatest offset index entry at or below offset, or 0 when offset is below the
// first, as Kafka's OffsetIndex.lookup. The batch holding offset, if any, starts
// at or after it.
func (x *Index) Find(offset int64) (position int64) {
	i := sort.Search(len(x.Offsets), func(i int) bool { return x.Offsets[i].Offset > offset })
	if i == 0 {
		return 0
	}
	return x.Offsets[i-1].Position
}

// FindTimestamp returns where to start scanning for the first batch whose
// MaxTimestamp is at least ts: the offset and data position of the last time index
// entry below ts (every batch up to it has a smaller MaxTimestamp, so the answer
// lies after it), or the start of the segment. ok is false when no batch can
// qualify, ts being above the segment's MaxTimestamp. SeekTimestamp finishes the
// scan on the data bytes from position.
func (x *Index) FindTimestamp(ts int64) (offset int64, position int64, ok bool) {
	if ts > x.Trailer.MaxTimestamp {
		return 0, 0, false
	}
	i := sort.Search(len(x.Times), func(i int) bool { return x.Times[i].Timestamp >= ts })
	if i == 0 {
		return x.Offsets[0].Offset, 0, true
	}
	return x.Times[i-1].Offset, x.timePos[i-1], true
}

// Batches yields the whole batches at the start of data, bytes read from a batch
// boundary of a segment's data part (a position Find or FindTimestamp returned),
// with their headers. It stops at the first batch that is cut short (a ranged read
// may end inside one) or whose header does not parse; batches do not have their
// CRCs checked. ReadBatches is the checked form.
func Batches(data []byte) iter.Seq2[record.Header, []byte] {
	return func(yield func(record.Header, []byte) bool) {
		for at := 0; at < len(data); {
			h, err := record.ParseHeader(data[at:])
			if err != nil || h.Size() > len(data)-at {
				return
			}
			n := h.Size()
			if !yield(h, data[at:at+n:at+n]) {
				return
			}
			at += n
		}
	}
}

// ReadBatches returns the whole batches of data as Batches frames them, checking
// each with record.ValidateStored, and the number of bytes they take; bytes after them
// are an incomplete batch. Malformed bytes are an error.
func ReadBatches(data []byte) ([][]byte, int, error) {
	var out [][]byte
	at := 0
	for at < len(data) {
		h, err := record.ParseHeader(data[at:])
		if err != nil {
			if len(data)-at < record.HeaderSize {
				break // a cut-short header, unless it is already bad
			}
			return nil, 0, fmt.Errorf("%w: batch at %d: %w", ErrCorrupt, at, err)
		}
		if h.Size() > len(data)-at {
			break
		}
		b := data[at : at+h.Size() : at+h.Size()]
		if _, err := record.ValidateStored(b); err != nil {
			return nil, 0, fmt.Errorf("%w: batch at %d: %w", ErrCorrupt, at, err)
		}
		out = append(out, b)
		at += len(b)
	}
	return out, at, nil
}

// SeekTimestamp scans data, the segment's data bytes from position pos (from
// FindTimestamp), for the first batch whose MaxTimestamp is at least ts, and
// returns its base offset and data position. ok is false when no whole batch in
// data qualifies.
func SeekTimestamp(data []byte, pos int64, ts int64) (offset int64, position int64, ok bool) {
	at := pos
	for h, b := range Batches(data) {
		if h.MaxTimestamp >= ts {
			return h.BaseOffset, at, true
		}
		at += int64(len(b))
	}
	return 0, 0, false
}
