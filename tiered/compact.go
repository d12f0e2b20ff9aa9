package tiered

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	"github.com/floe-io/floe/record"
)

// Compaction rewrites a compacted topic's segment batch by batch, by the rules of
// Kafka's log cleaner (Cleaner.cleanInto and MemoryRecords.filterTo):
//
//	segment data --CompactBatches--> per batch: CompactBatch(CompactPolicy)
//	   every record kept  -> the batch, byte for byte
//	   some kept          -> rebuilt: same base offset, last offset delta, producer
//	                         fields, attributes and codec; the kept records' offsets
//	   a tombstone kept,  -> rebuilt with the delete horizon (KIP-534): the
//	   no horizon yet        AttrDeleteHorizon bit, StampHorizon as base timestamp
//	   none kept          -> dropped, or a header-only batch when RetainEmpty
//	   control batch      -> as it is
//
// Offsets never change, so a compacted segment has gaps, between batches and
// inside them (record offset deltas skip the removed records).

// CompactPolicy says what compaction keeps of a segment's batches and what it
// writes into the batches it keeps: CompactBatch and CompactBatches take one.
type CompactPolicy struct {
	// Keep is asked about each keyed record of each non-control batch and
	// reports whether it stays (OffsetMap.Keep is Kafka's cleaner's rule).
	// With Lazy it may be asked more than once about a record (a batch is
	// decoded again when it turns out to need a rebuild), so it must
	// answer the same each time. Required.
	Keep func(RecordInfo) bool
	// Lazy copies no record until one is dropped, for rules that mostly
	// keep whole batches (a view's key filter): a batch that keeps every
	// record then costs one decode and no copy, but one whose first drop
	// comes after kept records is decoded again (see collect). Without it
	// every kept record is copied as it is decoded, which costs less when
	// drops are common (BenchmarkCompactBatch).
	Lazy bool
	// RetainEmpty is asked, for each non-control batch left with no record,
	// whether to keep it as a bare header. Kafka keeps one when it holds an
	// active producer's last sequence (Cleaner.cleanInto,
	// isBatchLastRecordOfProducer) and when it is the last batch of the
	// cleaned range, so that the range's last offset survives. Default: nil,
	// never.
	RetainEmpty func(record.Header) bool
	// StampHorizon, when above 0, is the delete horizon (KIP-534) a kept
	// batch gets when it has none yet and keeps a tombstone at an offset at
	// most StampThrough: the batch is rebuilt with AttrDeleteHorizon set and
	// StampHorizon as its base timestamp, each kept record's timestamp the
	// same (its delta rebased onto the horizon, so deltas go negative) and
	// MaxTimestamp still the largest record timestamp (the append time for a
	// LogAppendTime batch). A later pass drops the batch's tombstones once
	// its clock reaches the horizon (HorizonPassed). The caller passes now
	// plus delete.retention.ms, as Kafka's cleaner does, so that a tombstone
	// lives delete.retention.ms after the pass that first compacted it, not
	// after it was written. Default: 0, never.
	StampHorizon int64
	// StampThrough bounds the tombstones that earn a horizon: the last
	// offset the pass indexed (its cleanedThrough). A tombstone past it was
	// kept only because the pass did not look at it, and is stamped by a
	// later pass that does.
	StampThrough int64
	// Marker is told of each control batch, in log order, with whether it
	// holds a commit marker, and reports whether the batch may go: Kafka's
	// cleaner lets a marker go once no batch of its transaction is left
	// (CleanedTransactionMetadata.onControlBatchRead). Such a batch gets
	// the delete horizon StampHorizon the first time (rebuilt, as a batch
	// keeping a tombstone is) and goes once NowMs reaches it, or becomes a
	// bare header when RetainEmpty says so. Default: nil, every control
	// batch stays as it is.
	Marker func(h record.Header, commit bool) bool
	// NowMs is the pass's clock, which a marker's delete horizon is read
	// against.
	NowMs int64
	// AskKeyless has Keep asked about keyless records too (RecordInfo.Key
	// nil), which compaction keeps without asking: a filter by key (a
	// hierarchical view's) drops them. Default: false.
	AskKeyless bool
}

// HorizonPassed reports whether r is a tombstone whose batch carries a delete
// horizon (KIP-534: AttrDeleteHorizon, the horizon in its base timestamp) at
// or below nowMs: delete.retention.ms has passed since a pass first kept it,
// and it can go.
func HorizonPassed(r RecordInfo, nowMs int64) bool {
	return r.Tombstone && r.Batch.Attributes&record.AttrDeleteHorizon != 0 && r.Batch.BaseTimestamp <= nowMs
}

// RecordInfo is what a compaction predicate sees of one record.
type RecordInfo struct {
	// Key is the record's key, never nil (keyless records are kept without
	// asking) unless CompactPolicy.AskKeyless. It aliases a decoding
	// buffer: valid only during the call.
	Key []byte
	// Offset is the record's offset: the batch's base offset plus its delta.
	Offset int64
	// Timestamp is the record's timestamp, as a consumer sees it: the batch's
	// MaxTimestamp for a LogAppendTime batch, else its base timestamp plus the
	// record's delta.
	Timestamp int64
	// Tombstone reports a null value: a delete, kept only while within
	// delete.retention.ms.
	Tombstone bool
	// Batch is the header of the record's batch, valid only during the call,
	// for rules over whole batches: an aborted transaction's records go
	// whatever their keys (Kafka's cleaner discards them, and leaves them out
	// of the offset map).
	Batch *record.Header
}

// CompactStats counts what compaction read and wrote.
type CompactStats struct {
	// BatchesIn counts the batches read; BatchesOut those written, including
	// EmptyBatches.
	BatchesIn, BatchesOut int
	// EmptyBatches counts batches left with no record and written as a bare
	// header because retainEmpty asked for it (the producer's last sequence).
	EmptyBatches int
	// RewrittenBatches counts batches rebuilt with some of their records, or
	// all of them and a new delete horizon (EmptyBatches not included); the
	// other batches written are unchanged.
	RewrittenBatches int
	// StampedBatches counts the rewritten batches that got a delete horizon
	// (CompactPolicy.StampHorizon).
	StampedBatches int
	// RecordsIn counts the records read, control records included;
	// RecordsKept those written, of which TombstonesKept are keyed records
	// with a null value.
	RecordsIn, RecordsKept, TombstonesKept int64
	// BytesIn and BytesOut count batch bytes read and written.
	BytesIn, BytesOut int64
}

// add adds s's counts to st's.
func (st *CompactStats) add(s CompactStats) {
	st.BatchesIn += s.BatchesIn
	st.BatchesOut += s.BatchesOut
	st.EmptyBatches += s.EmptyBatches
	st.RewrittenBatches += s.RewrittenBatches
	st.StampedBatches += s.StampedBatches
	st.RecordsIn += s.RecordsIn
	st.RecordsKept += s.RecordsKept
	st.TombstonesKept += s.TombstonesKept
	st.BytesIn += s.BytesIn
	st.BytesOut += s.BytesOut
}

// Keep returns the record predicate of Kafka's cleaner (Cleaner.shouldRetainRecord)
// over m, for CompactBatch and CompactBatches: a record past m's LatestOffset is
// kept (this pass did not index it), a record below its key's latest offset is
// removed, and a tombstone whose timestamp is below deleteHorizon (the time
// delete.retention.ms ago, as the caller reckons it; math.MinInt64 keeps every
// tombstone) is removed too. Kafka since KIP-534 compares the horizon with one
// it writes into the batch on the pass that first meets the tombstone; this
// compares it with the record's timestamp, so a caller that wants tombstones
// to live delete.retention.ms after they were compacted must say so in
// deleteHorizon, or drop tombstones by HorizonPassed and stamp them with
// CompactPolicy.StampHorizon. Aborted transactions are the caller's to drop
// (RecordInfo.Batch).
func (m *OffsetMap) Keep(deleteHorizon int64) func(RecordInfo) bool {
	return func(r RecordInfo) bool {
		if r.Offset > m.latest {
			return true
		}
		if latest, ok := m.Get(r.Key); ok && r.Offset < latest {
			return false
		}
		return !r.Tombstone || r.Timestamp >= deleteHorizon
	}
}

// CompactBatches compacts data, the concatenated batches of a segment's data
// part (as Writer wrote them: real base offsets in), with CompactBatch under p,
// and returns the surviving batches concatenated, what a compaction job writes
// into the new segment. data must be whole batches: a batch cut short or not
// parsing is an ErrCorrupt error. The result is nil when nothing survives.
func CompactBatches(data []byte, p CompactPolicy) ([]byte, CompactStats, error) {
	var (
		c   compactor
		out []byte
		st  CompactStats
	)
	if p.Keep == nil {
		return nil, st, errors.New("tiered: CompactBatches needs a keep predicate")
	}
	for at := 0; at < len(data); {
		h, err := record.ParseHeader(data[at:])
		if err != nil {
			return nil, st, fmt.Errorf("%w: batch at byte %d: %w", ErrCorrupt, at, err)
		}
		n := h.Size()
		if n > len(data)-at {
			return nil, st, corruptf("batch at byte %d: %d bytes, %d left", at, n, len(data)-at)
		}
		b, bst, err := c.compact(data[at:at+n:at+n], h, &p)
		if err != nil {
			return nil, st, fmt.Errorf("batch at byte %d: %w", at, err)
		}
		out = append(out, b...)
		st.add(bst)
		at += n
	}
	return out, st, nil
}

// CompactBatch compacts one magic v2 batch, as a segment stores it (base offset
// written in), keeping the records p.Keep accepts:
//   - a control batch (transaction markers) is returned as it is, Keep not asked,
//     unless p.Marker lets it go: then it gets a delete horizon, or, once that
//     has passed, goes (or becomes a bare header when p.RetainEmpty says so);
//   - a keyless record is kept, Keep not asked (compacted topics refuse them at
//     produce);
//   - when every record is kept and no delete horizon is due, the batch is
//     returned as it is (b itself);
//   - when none is, the result is nil, or, when p.RetainEmpty says so (the batch
//     holds its producer's last sequence, which idempotent producers' state
//     needs), a bare header as Kafka's DefaultRecordBatch.writeEmptyHeader writes
//     it: no records, no compression, the same last offset delta, producer
//     fields, partition leader epoch, timestamp type and transactional flag, and
//     the batch's MaxTimestamp as its max timestamp (base timestamp -1);
//   - otherwise the kept records are rebuilt into a new batch with the same base
//     offset, last offset delta (so the next offset stays right), partition leader
//     epoch, producer id, epoch and base sequence, attributes and codec (default
//     level, snappy framed as before), base timestamp, and each record's offset
//     delta and timestamp. Its MaxTimestamp is the kept records' largest
//     timestamp, or the batch's for LogAppendTime. Should every kept record be
//     older than the base timestamp, the base becomes the first one's timestamp,
//     as Kafka's builder always does, since a CreateTime batch's max must not be
//     below its base. A batch that gets a delete horizon (p.StampHorizon) has it
//     as its base timestamp instead, with AttrDeleteHorizon set.
//
// It checks b's length and CRC and decodes every record, so corrupt bytes are an
// error wrapping ErrCorrupt, never a panic; the rebuilt batch's header and CRC are
// checked too. The result's NumRecords may be below LastOffsetDelta+1 (gaps), so
// it does not pass record.Validate, which checks what producers send.
func CompactBatch(b []byte, p CompactPolicy) ([]byte, CompactStats, error) {
	if p.Keep == nil {
		return nil, CompactStats{}, errors.New("tiered: CompactBatch needs a keep predicate")
	}
	h, err := record.ParseHeader(b)
	if err != nil {
		return nil, CompactStats{}, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	var c compactor
	return c.compact(b, h, &p)
}

// compactor holds the buffers one compaction reuses from batch to batch: the
// kept records and copies of their bytes, which record.Records lends only for
// the length of a call.
type compactor struct {
	recs  []record.Record
	hdrs  []record.RecordHeader
	arena []byte
}

// keepCopy appends a copy of r to c.recs, for a rebuild (see collect). Null
// (nil) and empty slices stay apart. Slices taken from c.arena or c.hdrs before they grew still point at
// the old arrays, which hold the same bytes.
func (c *compactor) keepCopy(r *record.Record) {
	cp := *r
	cp.Key, cp.Value = c.copy(r.Key), c.copy(r.Value)
	if len(r.Headers) > 0 {
		start := len(c.hdrs)
		for _, rh := range r.Headers {
			c.hdrs = append(c.hdrs, record.RecordHeader{Key: rh.Key, Value: c.copy(rh.Value)})
		}
		cp.Headers = c.hdrs[start:len(c.hdrs):len(c.hdrs)]
	}
	c.recs = append(c.recs, cp)
}

func (c *compactor) copy(b []byte) []byte {
	switch {
	case b == nil:
		return nil
	case len(b) == 0:
		return []byte{}
	}
	start := len(c.arena)
	c.arena = append(c.arena, b...)
	return c.arena[start:len(c.arena):len(c.arena)]
}

// compact is CompactBatch on b, whose parsed header is h, asking
// p.RetainEmpty (if not nil) only when no record is kept.
func (c *compactor) compact(b []byte, h record.Header, p *CompactPolicy) ([]byte, CompactStats, error) {
	st := CompactStats{BatchesIn: 1, BytesIn: int64(len(b))}
	if err := checkStored(b, h); err != nil {
		return nil, st, err
	}
	st.RecordsIn = int64(max(h.NumRecords, 0))
	c.recs, c.hdrs, c.arena = c.recs[:0], c.hdrs[:0], c.arena[:0]
	if h.Control() {
		return c.compactMarker(b, h, p, st)
	}

	kept, dropped, stamp, err := c.collect(b, h, p, &st)
	if err != nil {
		return nil, st, fmt.Errorf("%w: records of the batch at offset %d: %w", ErrCorrupt, h.BaseOffset, err)
	}
	switch {
	case kept == 0:
		if p.RetainEmpty == nil || !p.RetainEmpty(h) {
			return nil, st, nil
		}
		st.EmptyBatches = 1
		if h.NumRecords == 0 && h.Codec() == record.CodecNone {
			return c.unchanged(b, st) // already a bare header
		}
		return c.checked(emptyBatch(h), h, st)
	case !dropped && !stamp:
		return c.unchanged(b, st)
	}
	want := h // the rebuilt batch's header, as checked
	horizon := int64(0)
	if stamp {
		horizon = p.StampHorizon
		want.Attributes |= record.AttrDeleteHorizon
		want.BaseTimestamp = horizon
		st.StampedBatches = 1
	}
	out, err := c.rebuild(b, h, horizon)
	if err != nil {
		return nil, st, err
	}
	st.RewrittenBatches = 1
	st.RecordsKept = int64(len(c.recs))
	return c.checked(out, want, st)
}

// errRecopy stops collect's lazy pass at the first record dropped after some
// were kept: they were not copied, and the pass starts again copying.
var errRecopy = errors.New("tiered: copy the kept records")

// collect decodes b's records (header h), asking p which to keep, copies the
// kept ones into c.recs, and counts the tombstones kept into st. dropped
// reports a record dropped; stamp, a kept tombstone that earns the batch a
// delete horizon.
//
// With p.Lazy it copies nothing until a record is dropped, so that a batch
// keeping every record is returned as it is with no copy. When the first
// drop comes after kept records, the pass starts again, copying from the
// start; when it comes first, nothing was skipped and the pass goes on
// copying. A lazy batch that keeps every record but earns a horizon is
// decoded again, copied, so that it can be rebuilt.
func (c *compactor) collect(b []byte, h record.Header, p *CompactPolicy, st *CompactStats) (kept int, dropped, stamp bool, err error) {
	logAppend := h.LogAppendTime()
	mayStamp := p.StampHorizon > 0 && h.Attributes&record.AttrDeleteHorizon == 0
	pass := func(copying bool) error {
		kept, dropped, stamp, st.TombstonesKept = 0, false, false, 0
		c.recs, c.hdrs, c.arena = c.recs[:0], c.hdrs[:0], c.arena[:0]
		return record.Records(b, func(r *record.Record) error {
			info := RecordInfo{
				Key:       r.Key,
				Offset:    h.BaseOffset + int64(r.OffsetDelta),
				Timestamp: h.BaseTimestamp + r.TimestampDelta,
				Tombstone: r.Value == nil,
				Batch:     &h,
			}
			if logAppend {
				info.Timestamp = h.MaxTimestamp
			}
			if r.Key != nil || p.AskKeyless {
				if !p.Keep(info) {
					if !copying && kept > 0 {
						return errRecopy
					}
					copying, dropped = true, true
					return nil
				}
				if info.Tombstone {
					st.TombstonesKept++
					stamp = stamp || mayStamp && info.Offset <= p.StampThrough
				}
			}
			kept++
			if copying {
				c.keepCopy(r)
			}
			return nil
		})
	}
	err = pass(!p.Lazy)
	if p.Lazy && (errors.Is(err, errRecopy) || err == nil && !dropped && stamp) {
		err = pass(true)
	}
	return kept, dropped, stamp, err
}

// compactMarker is compact for a control batch.
func (c *compactor) compactMarker(b []byte, h record.Header, p *CompactPolicy, st CompactStats) ([]byte, CompactStats, error) {
	commit := false
	err := record.Records(b, func(r *record.Record) error { // a marker is small: check it too
		// A control record's key is its version and type (1: commit).
		commit = len(r.Key) >= 4 && binary.BigEndian.Uint16(r.Key[2:4]) == 1
		c.keepCopy(r)
		return nil
	})
	if err != nil {
		return nil, st, fmt.Errorf("%w: records of the control batch at offset %d: %w", ErrCorrupt, h.BaseOffset, err)
	}
	if p.Marker == nil || !p.Marker(h, commit) {
		return c.unchanged(b, st)
	}
	stamped := h.Attributes&record.AttrDeleteHorizon != 0
	switch {
	case len(c.recs) == 0 || stamped && h.BaseTimestamp <= p.NowMs:
		if p.RetainEmpty == nil || !p.RetainEmpty(h) {
			return nil, st, nil
		}
		st.EmptyBatches = 1
		if h.NumRecords == 0 {
			return c.unchanged(b, st) // already a bare header
		}
		return c.checked(emptyBatch(h), h, st)
	case stamped || p.StampHorizon <= 0:
		return c.unchanged(b, st)
	}
	want := h
	want.Attributes |= record.AttrDeleteHorizon
	want.BaseTimestamp = p.StampHorizon
	out, err := c.rebuild(b, h, p.StampHorizon)
	if err != nil {
		return nil, st, err
	}
	st.StampedBatches, st.RewrittenBatches = 1, 1
	st.RecordsKept = int64(len(c.recs))
	return c.checked(out, want, st)
}

// unchanged returns b, counted as written whole.
func (c *compactor) unchanged(b []byte, st CompactStats) ([]byte, CompactStats, error) {
	st.BatchesOut = 1
	st.RecordsKept = st.RecordsIn
	st.BytesOut = int64(len(b))
	return b, st, nil
}

// checked checks out, built from the batch whose header is h, and counts it.
func (c *compactor) checked(out []byte, h record.Header, st CompactStats) ([]byte, CompactStats, error) {
	if err := checkRebuilt(out, h, int32(st.RecordsKept)); err != nil {
		return nil, st, fmt.Errorf("tiered: compacted batch at offset %d: %w", h.BaseOffset, err)
	}
	st.BatchesOut = 1
	st.BytesOut = int64(len(out))
	return out, st, nil
}

// rebuild encodes c.recs, the kept records of batch b (header h), as b's
// compacted batch, with delete horizon horizon when above 0 (b has none).
func (c *compactor) rebuild(b []byte, h record.Header, horizon int64) ([]byte, error) {
	opts := record.BuildOptions{
		Codec:                h.Codec(),
		SnappyXerial:         h.Codec() == record.CodecSnappy && bytes.HasPrefix(b[record.HeaderSize:], xerialMagic),
		BaseOffset:           h.BaseOffset,
		PartitionLeaderEpoch: h.PartitionLeaderEpoch,
		Attributes:           h.Attributes &^ record.AttrCodecMask,
		BaseTimestamp:        h.BaseTimestamp,
		ProducerID:           h.ProducerID,
		ProducerEpoch:        h.ProducerEpoch,
		BaseSequence:         h.BaseSequence,
		KeepOffsetDeltas:     true,
		LastOffsetDelta:      h.LastOffsetDelta,
	}
	switch {
	case horizon > 0:
		// Each record keeps its timestamp: its delta is rebased onto the
		// horizon, which Build allows above the records' timestamps.
		opts.Attributes |= record.AttrDeleteHorizon
		opts.BaseTimestamp = horizon
		for i := range c.recs {
			c.recs[i].TimestampDelta += h.BaseTimestamp - horizon
		}
	case h.Attributes&(record.AttrLogAppendTime|record.AttrDeleteHorizon) == 0:
		maxDelta := c.recs[0].TimestampDelta
		for i := range c.recs {
			maxDelta = max(maxDelta, c.recs[i].TimestampDelta)
		}
		if maxDelta < 0 {
			shift := c.recs[0].TimestampDelta
			opts.BaseTimestamp += shift
			for i := range c.recs {
				c.recs[i].TimestampDelta -= shift
			}
		}
	}
	out, err := record.Build(opts, c.recs)
	if err != nil {
		return nil, fmt.Errorf("tiered: rebuild the batch at offset %d: %w", h.BaseOffset, err)
	}
	if h.LogAppendTime() {
		record.SetLogAppendTime(out, h.MaxTimestamp) // every record's timestamp, as before
	}
	return out, nil
}

// xerialMagic starts snappy data framed as the Java client writes it (xerial
// snappy-java), which a rebuilt batch keeps.
var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

// Offsets of the batch header fields emptyBatch writes; see record/doc.go.
const (
	batchOffCRC        = 17
	batchOffAttributes = 21

	// emptyBatchLength is a bare header's BatchLength, which counts the bytes
	// after the base offset and itself.
	emptyBatchLength = record.HeaderSize - 12
)

// emptyBatch returns the bare header Kafka's DefaultRecordBatch.writeEmptyHeader
// writes for the batch whose header is h once compaction has removed all its
// records. record.Build needs at least one record, so it is encoded here.
func emptyBatch(h record.Header) []byte {
	b := make([]byte, 0, record.HeaderSize)
	b = binary.BigEndian.AppendUint64(b, uint64(h.BaseOffset))
	b = binary.BigEndian.AppendUint32(b, emptyBatchLength)
	b = binary.BigEndian.AppendUint32(b, uint32(h.PartitionLeaderEpoch))
	b = append(b, 2)          // magic
	b = append(b, 0, 0, 0, 0) // crc, below
	attrs := h.Attributes & (record.AttrLogAppendTime | record.AttrTransactional | record.AttrControl)
	b = binary.BigEndian.AppendUint16(b, uint16(attrs))
	b = binary.BigEndian.AppendUint32(b, uint32(h.LastOffsetDelta))
	b = binary.BigEndian.AppendUint64(b, ^uint64(0)) // base timestamp: -1, no record
	b = binary.BigEndian.AppendUint64(b, uint64(h.MaxTimestamp))
	b = binary.BigEndian.AppendUint64(b, uint64(h.ProducerID))
	b = binary.BigEndian.AppendUint16(b, uint16(h.ProducerEpoch))
	b = binary.BigEndian.AppendUint32(b, uint32(h.BaseSequence))
	b = binary.BigEndian.AppendUint32(b, 0) // no records
	binary.BigEndian.PutUint32(b[batchOffCRC:], batchCRC(b))
	return b
}

// batchCRC returns the CRC-32C of batch b from its attributes to its end, what
// the batch's crc field holds.
func batchCRC(b []byte) uint32 { return crc32.Checksum(b[batchOffAttributes:], castagnoli) }

// checkStored checks that b, whose parsed header is h, is exactly one batch with
// a right CRC and a record count and last offset delta that can hold: the
// checks of record.Validate that a compacted batch still passes. Records checks
// the rest.
func checkStored(b []byte, h record.Header) error {
	switch {
	case h.Size() != len(b):
		return corruptf("batch at offset %d: length %d says %d bytes, have %d", h.BaseOffset, h.BatchLength, h.Size(), len(b))
	case batchCRC(b) != h.CRC:
		return corruptf("batch at offset %d: crc %#08x, computed %#08x", h.BaseOffset, h.CRC, batchCRC(b))
	case h.LastOffsetDelta < 0 || h.NumRecords < 0 || int64(h.NumRecords) > int64(h.LastOffsetDelta)+1:
		return corruptf("batch at offset %d: %d records, last offset delta %d", h.BaseOffset, h.NumRecords, h.LastOffsetDelta)
	}
	return nil
}

// checkRebuilt checks out, rebuilt from the batch whose header is h with n
// records: one batch with a right CRC and h's offsets and producer fields (h
// carries the delete horizon out must have, if any).
func checkRebuilt(out []byte, h record.Header, n int32) error {
	g, err := record.ParseHeader(out)
	if err != nil {
		return err
	}
	if err := checkStored(out, g); err != nil {
		return err
	}
	switch {
	case g.BaseOffset != h.BaseOffset || g.LastOffsetDelta != h.LastOffsetDelta:
		return fmt.Errorf("offsets %d+%d, want %d+%d", g.BaseOffset, g.LastOffsetDelta, h.BaseOffset, h.LastOffsetDelta)
	case g.ProducerID != h.ProducerID || g.ProducerEpoch != h.ProducerEpoch || g.BaseSequence != h.BaseSequence:
		return fmt.Errorf("producer %d/%d/%d, want %d/%d/%d", g.ProducerID, g.ProducerEpoch, g.BaseSequence, h.ProducerID, h.ProducerEpoch, h.BaseSequence)
	case g.PartitionLeaderEpoch != h.PartitionLeaderEpoch:
		return fmt.Errorf("leader epoch %d, want %d", g.PartitionLeaderEpoch, h.PartitionLeaderEpoch)
	case g.NumRecords != n:
		return fmt.Errorf("%d records, want %d", g.NumRecords, n)
	case n > 0 && g.Attributes != h.Attributes:
		return fmt.Errorf("attributes %#04x, want %#04x", g.Attributes, h.Attributes)
	case h.LogAppendTime() && g.MaxTimestamp != h.MaxTimestamp:
		return fmt.Errorf("log append time %d, want %d", g.MaxTimestamp, h.MaxTimestamp)
	case n > 0 && h.Attributes&record.AttrDeleteHorizon != 0 && g.BaseTimestamp != h.BaseTimestamp:
		return fmt.Errorf("delete horizon %d, want %d", g.BaseTimestamp, h.BaseTimestamp)
	}
	return nil
}

// EmptyBatch returns a bare batch header with no records for header h, as
// Kafka writes for a batch compaction emptied: h's base offset, last offset
// delta, leader epoch, max timestamp, producer fields and its
// LogAppendTime, transactional and control bits, with a valid CRC. Readers
// skip it and take its last offset as read.
func EmptyBatch(h record.Header) []byte { return emptyBatch(h) }
