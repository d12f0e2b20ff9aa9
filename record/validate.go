package record

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// checksum returns the CRC-32C of batch b, which must be at least HeaderSize long.
func checksum(b []byte) uint32 { return crc32.Checksum(b[offAttributes:], castagnoli) }

// Validate fully checks that b is exactly one magic v2 batch, as Kafka checks a batch a
// client produces, and returns its header. It does not decompress or parse the records:
// Records checks those.
//
// In order, it refuses:
//   - magic other than 2 (ErrUnsupportedMagic);
//   - a batch length that disagrees with len(b), or a CRC-32C mismatch (ErrCorrupt);
//   - a codec id outside 0-4 (ErrUnsupportedCodec);
//   - lastOffsetDelta < 0, numRecords < 1, or numRecords != lastOffsetDelta+1, the
//     record-count checks of Kafka's LogValidator (ErrInvalid);
//   - a producer id >= 0 with a negative base sequence or epoch, and a transactional
//     batch without a producer id (ErrInvalid);
//   - a CreateTime batch whose MaxTimestamp is neither -1 nor >= BaseTimestamp
//     (ErrInvalid): producers take the first record's timestamp as the base. Batches
//     with LogAppendTime or a delete horizon in BaseTimestamp are exempt.
//
// What depends on the topic or the request is left to the caller: control batches from
// clients, LogAppendTime set by a producer, zstd below Produce v7, timestamp bounds,
// size limits, and producer state.
func Validate(b []byte) (Header, error) { return validate(b, false) }

// ValidateStored is Validate for a batch as a log keeps it rather than as a
// producer sends it: compaction leaves gaps in a batch's offsets and may
// keep a batch with no records at all (its header holds the producer's
// last sequence), so the record count may be anything from 0 to
// lastOffsetDelta+1. Every other check is Validate's.
func ValidateStored(b []byte) (Header, error) { return validate(b, true) }

func validate(b []byte, stored bool) (Header, error) {
	h, err := parseWhole(b)
	if err != nil {
		return h, err
	}
	if crc := checksum(b); crc != h.CRC {
		return h, errorf(ErrCorrupt, "crc %#08x, computed %#08x", h.CRC, crc)
	}
	if c := h.Codec(); !c.valid() {
		return h, errorf(ErrUnsupportedCodec, "codec id %d", int8(c))
	}
	switch {
	case h.LastOffsetDelta < 0:
		return h, errorf(ErrInvalid, "invalid offset range: last offset delta %d", h.LastOffsetDelta)
	case stored && (h.NumRecords < 0 || int64(h.NumRecords) > int64(h.LastOffsetDelta)+1):
		return h, errorf(ErrInvalid, "record count %d does not fit last offset delta %d", h.NumRecords, h.LastOffsetDelta)
	case stored:
	case h.NumRecords <= 0:
		return h, errorf(ErrInvalid, "invalid record count %d", h.NumRecords)
	case h.NumRecords-1 != h.LastOffsetDelta:
		return h, errorf(ErrInvalid, "record count %d disagrees with last offset delta %d", h.NumRecords, h.LastOffsetDelta)
	}
	if h.ProducerID >= 0 {
		// A transaction marker (a control batch) carries its producer but
		// no sequence, as Kafka writes it.
		if h.BaseSequence < 0 && !h.Control() {
			return h, errorf(ErrInvalid, "invalid sequence %d for producer id %d", h.BaseSequence, h.ProducerID)
		}
		if h.ProducerEpoch < 0 {
			return h, errorf(ErrInvalid, "invalid epoch %d for producer id %d", h.ProducerEpoch, h.ProducerID)
		}
	} else if h.Transactional() {
		return h, errorf(ErrInvalid, "transactional batch without a producer id")
	}
	if h.Attributes&(AttrLogAppendTime|AttrDeleteHorizon) == 0 && h.MaxTimestamp != -1 && h.MaxTimestamp < h.BaseTimestamp {
		return h, errorf(ErrInvalid, "max timestamp %d is below base timestamp %d", h.MaxTimestamp, h.BaseTimestamp)
	}
	return h, nil
}

// parseWhole parses the header of b, which must be exactly one batch: unlike
// ParseHeader, it reports a short b as ErrCorrupt, not ErrShort.
func parseWhole(b []byte) (Header, error) {
	if len(b) <= offMagic {
		return Header{}, errorf(ErrCorrupt, "batch of %d bytes is shorter than a header", len(b))
	}
	h, err := ParseHeader(b)
	if err != nil {
		if errors.Is(err, ErrShort) {
			return h, errorf(ErrCorrupt, "batch of %d bytes is shorter than a header", len(b))
		}
		return h, err
	}
	if h.Size() != len(b) {
		return h, errorf(ErrCorrupt, "batch length %d says %d bytes, have %d", h.BatchLength, h.Size(), len(b))
	}
	return h, nil
}

// putCRC recomputes and stores the CRC of batch b.
func putCRC(b []byte) { binary.BigEndian.PutUint32(b[offCRC:], checksum(b)) }
