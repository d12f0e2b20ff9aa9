package tiered

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
)

// Format constants of segment format version 1.
const (
	// TrailerSize is the size in bytes of a version 1 trailer.
	TrailerSize = 88
	// Version is the format version Writer writes.
	Version = 1
	// Magic ends every segment object.
	Magic = "floeseg\x00"

	// OffsetEntrySize is the size of an offset index entry.
	OffsetEntrySize = 8
	// TimeEntrySize is the size of a time index entry.
	TimeEntrySize = 12

	// DefaultIndexIntervalBytes is the default Options.IndexIntervalBytes, Kafka's
	// index.interval.bytes default.
	DefaultIndexIntervalBytes = 4096
)

// Trailer field offsets.
const (
	offBaseOffset     = 0
	offLastOffset     = 8
	offMaxTimestamp   = 16
	offBatchCount     = 24
	offDataLength     = 32
	offOffsetIndexPos = 40
	offOffsetIndexLen = 48
	offTimeIndexPos   = 56
	offTimeIndexLen   = 64
	offCRC            = 72
	offVersion        = 76
	offMagic          = 80
)

// maxDataLength is the largest data part: index positions are uint32.
const maxDataLength = math.MaxUint32

// Errors of this package, checked with errors.Is.
var (
	// ErrCorrupt reports a segment object whose trailer or indexes do not parse
	// or do not check: bad magic, bad CRC, positions out of range, entries out of
	// order, or bytes cut short.
	ErrCorrupt = errors.New("tiered: corrupt segment")
	// ErrUnsupportedVersion reports a segment of a format version this package
	// does not read.
	ErrUnsupportedVersion = errors.New("tiered: unsupported segment version")
	// ErrInvalidBatch reports a batch Writer.Append refuses.
	ErrInvalidBatch = errors.New("tiered: invalid batch")
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func corruptf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrCorrupt, fmt.Sprintf(format, args...))
}

// Trailer is the decoded trailer of a segment object.
type Trailer struct {
	// Version is the format version.
	Version uint32
	// BaseOffset is the segment's base offset, the one in its object key.
	BaseOffset int64
	// LastOffset is the last offset of the segment's last batch.
	LastOffset int64
	// MaxTimestamp is the largest batch MaxTimestamp, -1 when none has one.
	MaxTimestamp int64
	// BatchCount is the number of batches in the data part.
	BatchCount uint64
	// DataLength is the size of the data part, which starts the object.
	DataLength uint64
	// OffsetIndexPos and OffsetIndexLen place the offset index in the object.
	OffsetIndexPos, OffsetIndexLen uint64
	// TimeIndexPos and TimeIndexLen place the time index in the object.
	TimeIndexPos, TimeIndexLen uint64
	// CRC is the CRC-32C of the indexes and the other trailer fields.
	CRC uint32
}

// IndexPos returns the position of the first index byte: a reader GETs the
// object from there to its end and hands the bytes to ParseIndexes.
func (t Trailer) IndexPos() int64 { return int64(t.OffsetIndexPos) }

// Size returns the size in bytes of the whole object.
func (t Trailer) Size() int64 { return int64(t.TimeIndexPos+t.TimeIndexLen) + TrailerSize }

// appendTrailer appends t encoded, with t.CRC as given.
func appendTrailer(dst []byte, t *Trailer) []byte {
	dst = binary.BigEndian.AppendUint64(dst, uint64(t.BaseOffset))
	dst = binary.BigEndian.AppendUint64(dst, uint64(t.LastOffset))
	dst = binary.BigEndian.AppendUint64(dst, uint64(t.MaxTimestamp))
	dst = binary.BigEndian.AppendUint64(dst, t.BatchCount)
	dst = binary.BigEndian.AppendUint64(dst, t.DataLength)
	dst = binary.BigEndian.AppendUint64(dst, t.OffsetIndexPos)
	dst = binary.BigEndian.AppendUint64(dst, t.OffsetIndexLen)
	dst = binary.BigEndian.AppendUint64(dst, t.TimeIndexPos)
	dst = binary.BigEndian.AppendUint64(dst, t.TimeIndexLen)
	dst = binary.BigEndian.AppendUint32(dst, t.CRC)
	dst = binary.BigEndian.AppendUint32(dst, t.Version)
	return append(dst, Magic...)
}

// trailerCRC returns the CRC-32C of indexes followed by trailer without its crc
// field.
func trailerCRC(indexes, trailer []byte) uint32 {
	c := crc32.Update(0, castagnoli, indexes)
	c = crc32.Update(c, castagnoli, trailer[:offCRC])
	return crc32.Update(c, castagnoli, trailer[offCRC+4:TrailerSize])
}

// ParseTrailer decodes the trailer in the last TrailerSize bytes of tail, which
// must end where the object ends, and checks that its fields agree with each
// other. It cannot check the CRC, which covers the indexes: ParseIndexes does.
func ParseTrailer(tail []byte) (Trailer, error) {
	var t Trailer
	if len(tail) < offVersion+4+len(Magic) {
		return t, corruptf("%d bytes, need %d for a trailer", len(tail), TrailerSize)
	}
	end := tail[len(tail)-(offMagic-offVersion+len(Magic)):]
	if string(end[4:]) != Magic {
		return t, corruptf("bad magic %q", end[4:])
	}
	t.Version = binary.BigEndian.Uint32(end)
	if t.Version != Version {
		return t, fmt.Errorf("%w: version %d", ErrUnsupportedVersion, t.Version)
	}
	if len(tail) < TrailerSize {
		return t, corruptf("%d bytes, need %d for a trailer", len(tail), TrailerSize)
	}
	b := tail[len(tail)-TrailerSize:]
	t.BaseOffset = int64(binary.BigEndian.Uint64(b[offBaseOffset:]))
	t.LastOffset = int64(binary.BigEndian.Uint64(b[offLastOffset:]))
	t.MaxTimestamp = int64(binary.BigEndian.Uint64(b[offMaxTimestamp:]))
	t.BatchCount = binary.BigEndian.Uint64(b[offBatchCount:])
	t.DataLength = binary.BigEndian.Uint64(b[offDataLength:])
	t.OffsetIndexPos = binary.BigEndian.Uint64(b[offOffsetIndexPos:])
	t.OffsetIndexLen = binary.BigEndian.Uint64(b[offOffsetIndexLen:])
	t.TimeIndexPos = binary.BigEndian.Uint64(b[offTimeIndexPos:])
	t.TimeIndexLen = binary.BigEndian.Uint64(b[offTimeIndexLen:])
	t.CRC = binary.BigEndian.Uint32(b[offCRC:])
	return t, t.check()
}

// check reports whether t's fields agree with each other.
func (t Trailer) check() error {
	switch {
	case t.BaseOffset < 0 || t.LastOffset < t.BaseOffset:
		return corruptf("offsets %d-%d", t.BaseOffset, t.LastOffset)
	case uint64(t.LastOffset-t.BaseOffset) > math.MaxUint32:
		return corruptf("offsets %d-%d span more than relative offsets can", t.BaseOffset, t.LastOffset)
	case t.MaxTimestamp < -1:
		return corruptf("max timestamp %d", t.MaxTimestamp)
	case t.BatchCount == 0:
		return corruptf("no batches")
	case t.DataLength > maxDataLength:
		return corruptf("data length %d is more than positions can address", t.DataLength)
	case t.BatchCount > t.DataLength/61:
		return corruptf("%d batches in %d bytes", t.BatchCount, t.DataLength)
	case t.OffsetIndexPos != t.DataLength:
		return corruptf("offset index at %d, data ends at %d", t.OffsetIndexPos, t.DataLength)
	case t.OffsetIndexLen == 0 || t.OffsetIndexLen%OffsetEntrySize != 0 || t.OffsetIndexLen/OffsetEntrySize > t.BatchCount:
		return corruptf("offset index of %d bytes for %d batches", t.OffsetIndexLen, t.BatchCount)
	case t.TimeIndexPos != t.OffsetIndexPos+t.OffsetIndexLen:
		return corruptf("time index at %d, offset index ends at %d", t.TimeIndexPos, t.OffsetIndexPos+t.OffsetIndexLen)
	case t.TimeIndexLen%TimeEntrySize != 0 || t.TimeIndexLen/TimeEntrySize > t.OffsetIndexLen/OffsetEntrySize:
		return corruptf("time index of %d bytes for %d offset index entries", t.TimeIndexLen, t.OffsetIndexLen/OffsetEntrySize)
	}
	return nil
}
