// Package tiered holds the segment tier: per-partition segment objects that
// consolidation jobs write from WAL batches. This file draws the segment object
// format; Writer writes one, ParseTrailer and ParseIndexes read one from ranged
// reads, and Batches walks its data part. Consolidator is the broker's side of
// consolidation (it runs the jobs the coordinator assigns: read WAL batches
// through the chunk cache, write a segment, report it for the swap), and Reader
// the read side (the batches of a segment from an offset, or from a timestamp,
// through the chunk cache, each segment's indexes loaded once).
//
// # Segment object
//
// A segment object holds one partition's batches over an offset range, then two
// sparse indexes, then a fixed-size trailer. Numbers are big-endian.
//
//	0                                   dataLength
//	+-----------------------------------+----------------+--------------+---------+
//	| data: Kafka v2 record batches     | offset index   | time index   | trailer |
//	| with their real base offsets and  | 8 B / entry    | 12 B / entry | 88 B    |
//	| partition leader epochs           |                |              |         |
//	+-----------------------------------+----------------+--------------+---------+
//	                                    ^ offsetIndexPos ^ timeIndexPos
//
// The data part is byte for byte a Kafka log segment (a .log file): the batches as
// producers sent them, with the base offset and the partition leader epoch written
// in. Neither is covered by the batch CRC (record/doc.go: the CRC-32C covers the
// bytes from attributes on), so every batch keeps its producer's CRC and a consumer
// can be handed any run of it as is. Offsets strictly increase from batch to batch;
// a compacted segment may have gaps.
//
// Offset index, Kafka's .index layout: one entry for the first batch and then one
// for the first batch starting at least IndexIntervalBytes (default 4096, Kafka's
// index.interval.bytes) after the previous entry's batch. Relative offsets are the
// batch's base offset minus the segment's base offset; positions are byte offsets
// in the data part. Both strictly increase, and the first position is 0.
//
//	+----------------+----------------+
//	| relativeOffset |   position     |
//	|    uint32      |    uint32      |
//	+----------------+----------------+
//
// Time index, Kafka's .timeindex layout: at each offset-index point where the
// running maximum timestamp (the largest MaxTimestamp of the batches up to and
// including the point's batch) is above the last time entry's, an entry with that
// running maximum and the batch's relative offset. Both strictly increase. Every batch before an entry's
// batch, and the batch itself, has a MaxTimestamp at most the entry's timestamp.
//
//	+--------------------------------+----------------+
//	|          timestamp             | relativeOffset |
//	|            int64               |    uint32      |
//	+--------------------------------+----------------+
//
// Trailer, TrailerSize (88) bytes at the very end:
//
//	 0            8            16             24           32           40
//	+------------+------------+--------------+------------+------------+
//	| baseOffset | lastOffset | maxTimestamp | batchCount | dataLength |
//	|   int64    |   int64    |    int64     |   uint64   |   uint64   |
//	+------------+------------+--------------+------------+------------+
//	 40               48               56             64             72
//	+----------------+----------------+--------------+--------------+
//	| offsetIndexPos | offsetIndexLen | timeIndexPos | timeIndexLen |
//	|    uint64      |    uint64      |   uint64     |   uint64     |
//	+----------------+----------------+--------------+--------------+
//	 72       76        80                 88
//	+--------+---------+------------------+
//	| crc    | version |      magic       |
//	| uint32 | uint32  | "floeseg\x00"    |
//	+--------+---------+------------------+
//
// baseOffset is the segment's (the object key's) base offset; lastOffset the last
// offset of its last batch; maxTimestamp the largest batch MaxTimestamp (-1 when no
// batch has one). The crc is a CRC-32C (Castagnoli) over both indexes followed by
// the trailer without the crc field (bytes 0-72 and 76-88), so a reader that has
// fetched the indexes and the trailer can trust them; the batches carry their own
// CRCs. The segment's sections are contiguous: offsetIndexPos = dataLength,
// timeIndexPos = offsetIndexPos + offsetIndexLen, and the trailer follows the time
// index.
//
// # Reading
//
// A reader GETs the last TrailerSize bytes (ParseTrailer), then the range from
// offsetIndexPos to the end (ParseIndexes), and caches the Index; both reads are
// one suffix GET when the reader guesses a large enough suffix, or knows the
// data length (a segment coordinate's ByteLength), as Reader does. Through the
// chunk cache that read is the object's last chunk, which holds the indexes
// with the last data. Index.Find gives the
// position to start a read for an offset and Index.FindTimestamp the position to
// start a scan for a timestamp; Batches and SeekTimestamp walk the data bytes read
// from there.
//
// # Versions
//
// This is format version 1. Version and magic are the last 12 bytes of every
// version, so a reader can read them first and learn the rest of the trailer's size.
// A future version gets a new number and may grow the trailer at its front, or add
// sections between the time index and the trailer; readers keep parsing every
// version they know, and objects of an old version are never rewritten in place:
// a consolidation or compaction job that rewrites a segment writes the current
// version under a new key, so old versions drain as retention and compaction
// replace them.
package tiered
