package record

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// BuildOptions describes the batch Build writes. Every header field is written as given;
// the zero value is an uncompressed batch at offset 0 from producer id 0, epoch 0,
// sequence 0 (an idempotent producer's first batch). A producer without idempotence
// sends PartitionLeaderEpoch, ProducerID, ProducerEpoch and BaseSequence as -1.
type BuildOptions struct {
	// Codec compresses the records. Default: CodecNone.
	Codec Codec
	// SnappyXerial frames snappy data as the Java client does (xerial, 32 KiB blocks)
	// instead of as one raw block, as franz-go and librdkafka do. Default: false.
	SnappyXerial bool

	// BaseOffset is the batch's base offset. Default: 0, what producers send.
	BaseOffset int64
	// PartitionLeaderEpoch is the batch's leader epoch. Default: 0; producers send -1.
	PartitionLeaderEpoch int32
	// Attributes are the flag bits (AttrLogAppendTime, AttrTransactional, AttrControl,
	// AttrDeleteHorizon) to set besides the codec; its codec bits must be 0.
	Attributes int16
	// BaseTimestamp is the batch's base timestamp; records' timestamps are deltas from
	// it, and MaxTimestamp is the largest of them. As producers take the first record's
	// timestamp as the base, some delta must be >= 0.
	BaseTimestamp int64
	// ProducerID, ProducerEpoch and BaseSequence identify an idempotent producer's batch.
	ProducerID    int64
	ProducerEpoch int16
	BaseSequence  int32

	// KeepOffsetDeltas writes each record's own OffsetDelta (strictly
	// increasing from 0 or more) instead of numbering the records, as a
	// compacted batch carries them: with gaps. Default: false.
	KeepOffsetDeltas bool
	// LastOffsetDelta, with KeepOffsetDeltas, is the header's last offset
	// delta when it is past the last record's (a compacted batch keeps its
	// original last delta). Default: the last record's delta.
	LastOffsetDelta int32
}

// Build encodes recs as one magic v2 batch, compressed with opts.Codec, that passes
// Validate and that Kafka clients read. It is for tests and tools: the broker forwards
// the batches producers send and never re-encodes them.
//
// Build numbers the records: record i gets OffsetDelta i, whatever recs[i].OffsetDelta
// holds, and LastOffsetDelta is len(recs)-1, unless opts.KeepOffsetDeltas. Keys, values and header values that are
// nil are written as null.
func Build(opts BuildOptions, recs []Record) ([]byte, error) {
	if len(recs) == 0 {
		return nil, errors.New("record: Build needs at least one record")
	}
	if opts.Attributes&AttrCodecMask != 0 {
		return nil, errors.New("record: BuildOptions.Attributes has codec bits set; use Codec")
	}
	if !opts.Codec.valid() {
		return nil, errorf(ErrUnsupportedCodec, "codec id %d", int8(opts.Codec))
	}
	if len(recs) > math.MaxInt32 {
		return nil, errors.New("record: too many records for one batch")
	}

	h := Header{
		BaseOffset:           opts.BaseOffset,
		PartitionLeaderEpoch: opts.PartitionLeaderEpoch,
		Magic:                2,
		Attributes:           opts.Attributes | int16(opts.Codec),
		LastOffsetDelta:      int32(len(recs) - 1),
		BaseTimestamp:        opts.BaseTimestamp,
		MaxTimestamp:         opts.BaseTimestamp + recs[0].TimestampDelta,
		ProducerID:           opts.ProducerID,
		ProducerEpoch:        opts.ProducerEpoch,
		BaseSequence:         opts.BaseSequence,
		NumRecords:           int32(len(recs)),
	}
	if opts.KeepOffsetDeltas {
		for i := range recs {
			if d := recs[i].OffsetDelta; d < 0 || i > 0 && d <= recs[i-1].OffsetDelta {
				return nil, fmt.Errorf("record: Build: offset delta %d of record %d is not above the previous one's", d, i)
			}
		}
		h.LastOffsetDelta = max(opts.LastOffsetDelta, recs[len(recs)-1].OffsetDelta)
	}
	var raw []byte
	for i := range recs {
		r := recs[i]
		if !opts.KeepOffsetDeltas {
			r.OffsetDelta = int32(i)
		}
		raw = appendRecord(raw, &r)
		h.MaxTimestamp = max(h.MaxTimestamp, opts.BaseTimestamp+r.TimestampDelta)
	}

	if h.Attributes&(AttrLogAppendTime|AttrDeleteHorizon) == 0 && h.MaxTimestamp < h.BaseTimestamp {
		return nil, errors.New("record: Build: every record's timestamp delta is negative; Validate would refuse the batch")
	}

	b := appendHeader(make([]byte, 0, HeaderSize+len(raw)), &h)
	if opts.Codec == CodecNone {
		b = append(b, raw...)
	} else {
		var err error
		if b, err = compress(b, opts.Codec, raw, opts.SnappyXerial); err != nil {
			return nil, fmt.Errorf("record: compress %s: %w", opts.Codec, err)
		}
	}
	if len(b)-lengthOverhead > math.MaxInt32 {
		return nil, errors.New("record: batch too large")
	}
	binary.BigEndian.PutUint32(b[offBatchLength:], uint32(len(b)-lengthOverhead))
	putCRC(b)
	return b, nil
}

// appendRecord appends r in the v2 record encoding: its varint length, then the
// record's fields.
func appendRecord(dst []byte, r *Record) []byte {
	var scratch [64]byte
	body := scratch[:0]
	body = append(body, byte(r.Attributes))
	body = appendVarlong(body, r.TimestampDelta)
	body = appendVarint(body, r.OffsetDelta)
	body = appendVarbytes(body, r.Key)
	body = appendVarbytes(body, r.Value)
	body = appendVarint(body, int32(len(r.Headers)))
	for _, h := range r.Headers {
		body = appendVarint(body, int32(len(h.Key)))
		body = append(body, h.Key...)
		body = appendVarbytes(body, h.Value)
	}
	dst = appendVarint(dst, int32(len(body)))
	return append(dst, body...)
}
