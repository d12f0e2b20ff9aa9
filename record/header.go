package record

import (
	"encoding/binary"
	"strconv"
)

// HeaderSize is the size in bytes of a magic v2 batch header: everything before the
// first record (or the compressed records).
const HeaderSize = 61

// Field offsets within a batch; see the diagram in the package documentation.
const (
	offBaseOffset           = 0
	offBatchLength          = 8
	offPartitionLeaderEpoch = 12
	offMagic                = 16
	offCRC                  = 17
	offAttributes           = 21 // the CRC covers from here to the end of the batch
	offLastOffsetDelta      = 23
	offBaseTimestamp        = 27
	offMaxTimestamp         = 35
	offProducerID           = 43
	offProducerEpoch        = 51
	offBaseSequence         = 53
	offNumRecords           = 57

	// lengthOverhead is what BatchLength does not count: base offset and the length.
	lengthOverhead = offPartitionLeaderEpoch
	// minBatchLength is the BatchLength of a batch with no record bytes.
	minBatchLength = HeaderSize - lengthOverhead
	// minLegacyLength is the smallest length field any magic could carry (a magic 0
	// message with null key and value), Kafka's LegacyRecord.RECORD_OVERHEAD_V0.
	minLegacyLength = 14
)

// Attribute bits of a batch.
const (
	// AttrCodecMask selects the compression codec from the attributes.
	AttrCodecMask = 0x07
	// AttrLogAppendTime is the timestamp type bit: set, the broker's append time in
	// MaxTimestamp is the timestamp of every record; clear, records carry create times.
	AttrLogAppendTime = 0x08
	// AttrTransactional marks a batch written inside a transaction.
	AttrTransactional = 0x10
	// AttrControl marks a control batch (transaction markers), written by brokers only.
	AttrControl = 0x20
	// AttrDeleteHorizon marks a batch whose base timestamp is a compaction delete
	// horizon (KIP-534), written by brokers only.
	AttrDeleteHorizon = 0x40
)

// Codec is a compression codec, the low three bits of a batch's attributes.
type Codec int8

// The codecs Kafka defines. Ids 5-7 are unassigned.
const (
	CodecNone   Codec = 0
	CodecGzip   Codec = 1
	CodecSnappy Codec = 2
	CodecLZ4    Codec = 3
	CodecZstd   Codec = 4
)

// String returns the codec's name as Kafka's compression.type config spells it.
func (c Codec) String() string {
	switch c {
	case CodecNone:
		return "none"
	case CodecGzip:
		return "gzip"
	case CodecSnappy:
		return "snappy"
	case CodecLZ4:
		return "lz4"
	case CodecZstd:
		return "zstd"
	}
	return "codec(" + strconv.Itoa(int(c)) + ")"
}

// valid reports whether c is one of the codecs Kafka defines.
func (c Codec) valid() bool { return c >= CodecNone && c <= CodecZstd }

// Header is the decoded header of a magic v2 record batch. Field names follow Kafka's
// DefaultRecordBatch.
type Header struct {
	// BaseOffset is the offset of the first record. Producers send 0; the broker
	// assigns the real value (SetBaseOffset) on the way to consumers.
	BaseOffset int64
	// BatchLength counts the bytes after itself: the whole batch is 12+BatchLength.
	BatchLength int32
	// PartitionLeaderEpoch is the leader epoch the batch was appended in; producers
	// send -1.
	PartitionLeaderEpoch int32
	// Magic is the format version; this package handles 2.
	Magic int8
	// CRC is the CRC-32C (Castagnoli) of the batch from Attributes to the end.
	CRC uint32
	// Attributes holds the codec and the Attr* flag bits.
	Attributes int16
	// LastOffsetDelta is the last record's offset minus BaseOffset. Compaction may
	// remove records but keeps it, so it can exceed NumRecords-1 in stored batches.
	LastOffsetDelta int32
	// BaseTimestamp is the first record's timestamp in milliseconds; records store
	// deltas from it.
	BaseTimestamp int64
	// MaxTimestamp is the largest record timestamp, or the log append time when
	// LogAppendTime is set.
	MaxTimestamp int64
	// ProducerID is the idempotent/transactional producer id, -1 for none.
	ProducerID int64
	// ProducerEpoch is the producer's epoch, -1 for none.
	ProducerEpoch int16
	// BaseSequence is the first record's sequence number, -1 for none.
	BaseSequence int32
	// NumRecords is the number of records in the batch.
	NumRecords int32
}

// Codec returns the compression codec of the batch's records.
func (h Header) Codec() Codec { return Codec(h.Attributes & AttrCodecMask) }

// LogAppendTime reports whether the timestamp type is LogAppendTime (attribute bit
// 0x08). Producers leave it clear (Kafka may answer INVALID_TIMESTAMP to one that does
// not); brokers set it, with SetLogAppendTime, for topics with
// message.timestamp.type=LogAppendTime.
func (h Header) LogAppendTime() bool { return h.Attributes&AttrLogAppendTime != 0 }

// Transactional reports whether the batch belongs to a transaction (attribute bit 0x10).
func (h Header) Transactional() bool { return h.Attributes&AttrTransactional != 0 }

// Control reports whether the batch holds control records (attribute bit 0x20). Kafka
// refuses control batches from clients with INVALID_RECORD; Validate does not, since
// stored batches written by brokers may be control batches.
func (h Header) Control() bool { return h.Attributes&AttrControl != 0 }

// Size returns the size in bytes of the whole batch, 12 + BatchLength.
func (h Header) Size() int { return lengthOverhead + int(h.BatchLength) }

// ParseHeader decodes the header of the batch at the start of b without checking its CRC
// or anything past the header, so it needs only the first HeaderSize bytes of the batch:
// it is how a reader frames batches in a stream and decides whether to fetch the rest.
//
// It returns ErrShort when b is too short to say, ErrUnsupportedMagic for magic other
// than 2 (with BaseOffset, BatchLength, PartitionLeaderEpoch and Magic filled in: the
// first 17 bytes are the same for every magic), and ErrCorrupt when BatchLength is too
// small for a v2 header.
func ParseHeader(b []byte) (Header, error) {
	var h Header
	if len(b) <= offMagic {
		return h, errorf(ErrShort, "%d bytes, need %d for a batch header", len(b), HeaderSize)
	}
	h.BaseOffset = int64(binary.BigEndian.Uint64(b[offBaseOffset:]))
	h.BatchLength = int32(binary.BigEndian.Uint32(b[offBatchLength:]))
	h.PartitionLeaderEpoch = int32(binary.BigEndian.Uint32(b[offPartitionLeaderEpoch:]))
	h.Magic = int8(b[offMagic])
	if h.Magic != 2 {
		return h, errorf(ErrUnsupportedMagic, "magic %d", h.Magic)
	}
	if h.BatchLength < minBatchLength {
		return h, errorf(ErrCorrupt, "batch length %d is below the minimum %d", h.BatchLength, minBatchLength)
	}
	if len(b) < HeaderSize {
		return h, errorf(ErrShort, "%d bytes, need %d for a batch header", len(b), HeaderSize)
	}
	h.CRC = binary.BigEndian.Uint32(b[offCRC:])
	h.Attributes = int16(binary.BigEndian.Uint16(b[offAttributes:]))
	h.LastOffsetDelta = int32(binary.BigEndian.Uint32(b[offLastOffsetDelta:]))
	h.BaseTimestamp = int64(binary.BigEndian.Uint64(b[offBaseTimestamp:]))
	h.MaxTimestamp = int64(binary.BigEndian.Uint64(b[offMaxTimestamp:]))
	h.ProducerID = int64(binary.BigEndian.Uint64(b[offProducerID:]))
	h.ProducerEpoch = int16(binary.BigEndian.Uint16(b[offProducerEpoch:]))
	h.BaseSequence = int32(binary.BigEndian.Uint32(b[offBaseSequence:]))
	h.NumRecords = int32(binary.BigEndian.Uint32(b[offNumRecords:]))
	return h, nil
}

// appendHeader appends h encoded as a batch header.
func appendHeader(dst []byte, h *Header) []byte {
	dst = binary.BigEndian.AppendUint64(dst, uint64(h.BaseOffset))
	dst = binary.BigEndian.AppendUint32(dst, uint32(h.BatchLength))
	dst = binary.BigEndian.AppendUint32(dst, uint32(h.PartitionLeaderEpoch))
	dst = append(dst, byte(h.Magic))
	dst = binary.BigEndian.AppendUint32(dst, h.CRC)
	dst = binary.BigEndian.AppendUint16(dst, uint16(h.Attributes))
	dst = binary.BigEndian.AppendUint32(dst, uint32(h.LastOffsetDelta))
	dst = binary.BigEndian.AppendUint64(dst, uint64(h.BaseTimestamp))
	dst = binary.BigEndian.AppendUint64(dst, uint64(h.MaxTimestamp))
	dst = binary.BigEndian.AppendUint64(dst, uint64(h.ProducerID))
	dst = binary.BigEndian.AppendUint16(dst, uint16(h.ProducerEpoch))
	dst = binary.BigEndian.AppendUint32(dst, uint32(h.BaseSequence))
	dst = binary.BigEndian.AppendUint32(dst, uint32(h.NumRecords))
	return dst
}
