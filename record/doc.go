// Package record reads, checks and patches Kafka record batches of magic 2, the format
// every Kafka client since 0.11 produces and consumes. It knows nothing of Kafka requests:
// the broker hands it the bytes of a Produce request's records field and gets back
// batches, headers, records and errors.
//
// # Batch layout
//
// A batch is a 61-byte header followed by its records, compressed as a whole when the
// codec bits say so. Numbers are big-endian; the CRC is a CRC-32C (Castagnoli) over the
// bytes from attributes to the end of the batch, so the base offset and the partition
// leader epoch, which the broker rewrites, are outside it.
//
//	 0               8              12              16 17              21
//	+---------------+---------------+---------------+--+---------------+
//	|  baseOffset   |  batchLength  |  partition    |ma|     crc       |
//	|    int64      |    int32      |  leaderEpoch  |gi|    uint32     |
//	|               | (bytes after  |    int32      |c |               |
//	|               |  this field)  |               |=2|               |
//	+---------------+---------------+---------------+--+---------------+
//	|<------------------ not covered by the crc ---------------------->|
//
//	21      23              27                      35                      43
//	+-------+---------------+-----------------------+-----------------------+
//	| attri | lastOffset    |    baseTimestamp      |     maxTimestamp      |
//	| butes |   Delta       |        int64          |        int64          |
//	| int16 |   int32       |                       |                       |
//	+-------+---------------+-----------------------+-----------------------+
//	|<------------ covered by the crc, to the end of the batch ----------------
//
//	43                      51      53              57              61
//	+-----------------------+-------+---------------+---------------+--------...
//	|      producerId       | prod. | baseSequence  |  numRecords   | records
//	|        int64          | epoch |    int32      |    int32      | (maybe
//	|                       | int16 |               |               | compressed)
//	+-----------------------+-------+---------------+---------------+--------...
//
// Attributes, low bits first:
//
//	bits 0-2  codec: 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd
//	bit  3    timestamp type: 0 CreateTime, 1 LogAppendTime
//	bit  4    transactional
//	bit  5    control batch
//	bit  6    delete horizon set (compaction, KIP-534)
//
// Each record is a varint length followed by that many bytes; varints are zig-zag
// LEB128, and lengths of -1 mean null:
//
//	length varint | attributes int8 | timestampDelta varlong | offsetDelta varint |
//	keyLength varint | key | valueLength varint | value | headerCount varint |
//	headerCount x (keyLength varint | key | valueLength varint | value)
//
// # Use
//
// The produce path calls Split on a partition's records, Validate on each batch, and
// Records on each batch too: with a nil fn to check every record, as Kafka does, or
// with one that collects keys for the key index, in the same pass. The fetch path patches copies with
// SetBaseOffset, SetPartitionLeaderEpoch and SetLogAppendTime. Build writes batches for
// tests and tools.
package record
