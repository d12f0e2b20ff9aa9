// Package tiered holds the segment tier: per-partition segment objects that
// consolidation jobs write from WAL batches. This file draws the segment object
// format; Writer writes one (in memory, or streamed to an upload as it goes:
// NewStreamWriter), ParseTrailer and ParseIndexes read one from ranged
// reads, and Batches walks its data part. Consolidator is the broker's side of
// consolidation (it runs the jobs the coordinator assigns: read WAL batches
// through the chunk cache, write a segment, report it for the swap), and Reader
// the read side (the batches of a segment from an offset, or from a timestamp,
// through the chunk cache, each segment's indexes loaded once). The
// Consolidator also runs compaction jobs, which rewrite a compacted topic's
// segments (Compaction, below), and, given a TableJobRunner, table jobs, which
// write a table.enabled topic's segments to its Iceberg table (tablejob.go).
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
// # Compaction
//
// Compaction is a tier job kind of its own (coordapi.TierJobCompact) over the
// segments of one partition of a compacted topic (cleanup.policy compact or
// compact,delete), from the log start on. The WAL tail is never compacted: it
// is the partition's uncleaned head, what Kafka's active segment is to its
// cleaner, and its batches are compacted once consolidation has moved them
// into segments. A job names its segments (contiguous), the cleaner
// checkpoint DirtyOffset (the records from it on were never cleaned),
// whether the key index is ready, the coordinator's clock NowMs,
// delete.retention.ms, segment.bytes, and the last offsets of the producers
// the partition keeps idempotence state for.
//
// The latest offset of each key comes from one of two places:
//
//   - the key index, where the topic has one and it is ready: it is the
//     authority (it also knows the WAL tail, so a key written again there
//     loses its segment records at once), and the pass covers every
//     segment: cleanedThrough is the job's last offset. Keys are asked per
//     read window (its distinct keys, in KvLatestOffsets requests of at most
//     4096 keys and about 1 MiB of key bytes), never all the partition's at
//     once. A key without an entry has a tombstone as its latest record.
//   - otherwise an OffsetMap (the dedupe buffer, Kafka's SkimpyOffsetMap)
//     built from DirtyOffset on, batch by batch, each keyed record's key
//     put with its offset, a control batch only advancing the map's latest
//     offset. The pass stops before a batch whose records might not fit;
//     cleanedThrough is then the map's latest offset, the job replaces the
//     segments that start at or before it, and the next pass starts after
//     it, so a partition with more keys than the buffer holds is cleaned
//     in several passes. A batch with more records than an empty map holds
//     fails the job.
//
// Each replaced segment is rewritten batch by batch (CompactBatch, Kafka's
// Cleaner.cleanInto and MemoryRecords.filterTo), offsets unchanged. A record
// past cleanedThrough is kept (the pass did not index it), and so is a
// keyless one. A keyed record at offset o goes when its key's latest offset
// is above o, or, with the key index, when its key has no entry and it is
// not a tombstone. A tombstone left after that goes once its batch carries
// a delete horizon at or below NowMs. A batch left empty is kept as a bare
// header when it holds a producer's last offset (its last sequence), or
// when it is the last batch of its input segment, so that the last output
// ends at the last replaced input's last offset; else it goes.
//
// Transaction markers (control batches) go as Kafka's cleaner lets them
// (CleanedTransactionMetadata): a commit marker at or below cleanedThrough
// whose transaction had no batch left in the pass (none of its producer's
// transactional batches read since that producer's previous marker) gets
// a delete horizon, NowMs + delete.retention.ms, when it has none (it is
// rebuilt as a batch keeping a tombstone is, and the horizon counts towards
// the result's); a pass at or past its horizon drops it, or keeps it as a
// bare header by the rule above. An abort marker stays: the coordinator
// lists its aborted transaction to read_committed consumers, who need the
// marker to close it, and that list is not pruned with markers.
//
// Delete horizon (KIP-534): a non-control batch without one that keeps a
// tombstone at or below cleanedThrough is rebuilt with AttrDeleteHorizon set
// and its base timestamp NowMs + delete.retention.ms, every record keeping
// its timestamp (its delta rebased, MaxTimestamp the largest record
// timestamp, or the append time of a LogAppendTime batch). A tombstone thus
// lives delete.retention.ms after the pass that first kept it, which gives a
// consumer reading from the log start that long to see it. The result
// reports the earliest horizon of a batch still holding tombstones, when the
// next pass is due.
//
// Outputs are cut at batch boundaries: each batch left goes into the output
// being built unless it has batches and the batch would take it past
// segment.bytes; then that output is finished and uploaded at once, and the
// next starts right after its last offset (its first batch may start later:
// a gap). The outputs cover the replaced inputs' range without a gap, the
// first from the job's base offset, the last to the last replaced input's
// last offset. Outputs are streamed to the store as they are built (an
// objectstore.Upload: S3 multipart parts), never held whole. Memory per job:
// the dedupe buffer (or one window's keys), one read window (MaxReadBytes, or
// one larger batch), its compacted batches and the output's upload part, the
// last three within the Consolidator's JobBufferBytes; one compaction job runs
// at a time per Consolidator.
//
// A job's outputs replace its replaced inputs in one coordinator write
// (CompleteTierJob with Compacted): the coordinator's side, fenced by the
// job id and its lease as a consolidation's swap is. A refused completion
// (STALE_BROKER_EPOCH) deletes the outputs; a completion that may have
// committed leaves them to the GC.
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
