package record

import "encoding/binary"

// The patches below rewrite a batch in place on its way to a consumer, as Kafka does
// when it appends: b must be a copy the caller owns, beginning with a whole batch. They
// panic if b is shorter than what they write (8, 16 and HeaderSize bytes), as
// binary.BigEndian.PutUint64 does, but never on the content of b.

// SetBaseOffset sets the batch's base offset to off. The CRC does not cover the base
// offset, so it stays valid.
func SetBaseOffset(b []byte, off int64) {
	binary.BigEndian.PutUint64(b[offBaseOffset:], uint64(off))
}

// SetPartitionLeaderEpoch sets the batch's partition leader epoch. The CRC does not cover
// it, so it stays valid.
func SetPartitionLeaderEpoch(b []byte, epoch int32) {
	binary.BigEndian.PutUint32(b[offPartitionLeaderEpoch:], uint32(epoch))
}

// SetLogAppendTime stamps the batch with log append time ts, as Kafka does for topics
// with message.timestamp.type=LogAppendTime: it sets the timestamp-type attribute bit and
// MaxTimestamp to ts and recomputes the CRC. BaseTimestamp and the records are left as
// they are; consumers take MaxTimestamp as every record's timestamp. The other attribute
// bits are kept. Like Kafka's DefaultRecordBatch.setMaxTimestamp, it leaves a batch that
// already carries ts as its log append time untouched.
//
// The CRC covers the batch as its BatchLength frames it. Should BatchLength not fit b
// (a batch corrupted since it was validated), the CRC covers what b holds, and the
// consumer's CRC check reports the corruption.
func SetLogAppendTime(b []byte, ts int64) {
	_ = b[HeaderSize-1]
	end := lengthOverhead + int64(int32(binary.BigEndian.Uint32(b[offBatchLength:])))
	end = min(max(end, HeaderSize), int64(len(b)))
	attrs := binary.BigEndian.Uint16(b[offAttributes:])
	if attrs&AttrLogAppendTime != 0 && int64(binary.BigEndian.Uint64(b[offMaxTimestamp:])) == ts {
		return
	}
	binary.BigEndian.PutUint16(b[offAttributes:], attrs|AttrLogAppendTime)
	binary.BigEndian.PutUint64(b[offMaxTimestamp:], uint64(ts))
	putCRC(b[:end])
}
