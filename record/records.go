package record

import (
	"sync"
)

// DefaultMaxDecompressed is the limit Records puts on the decompressed size of a batch's
// records: 64 MiB, 64 times Kafka's default max.message.bytes. Records streams, so the
// limit bounds work, not memory; Kafka has none, but a consumer, which decompresses a
// batch whole, must not be handed a small batch that inflates without bound.
const DefaultMaxDecompressed = 64 << 20

// The largest decompression buffer and header slice kept for reuse.
const (
	maxPooledBuffer  = 4 << 20
	maxPooledHeaders = 1 << 10
)

// RecordHeader is a record header: a key (never null) and a value (nil means null).
type RecordHeader struct {
	Key   string
	Value []byte
}

// Record is one record of a batch, as the v2 format stores it: timestamp and offset are
// deltas from the batch's BaseTimestamp and BaseOffset.
type Record struct {
	// Attributes is unused by Kafka and is 0.
	Attributes int8
	// TimestampDelta is the record's timestamp minus the batch's BaseTimestamp.
	TimestampDelta int64
	// OffsetDelta is the record's offset minus the batch's BaseOffset.
	OffsetDelta int32
	// Key and Value are the record's key and value; nil means null, which for the value
	// of a compacted topic's record is a tombstone.
	Key, Value []byte
	// Headers are the record's headers, in order.
	Headers []RecordHeader
}

// Records decodes the records of batch b (exactly one batch, as Split returns it) and
// calls fn with each in order, decompressing as it goes if the batch is compressed. It
// stops at the first error fn returns and returns it unchanged. With a nil fn, Records
// only checks the records (and skips materializing their headers).
//
// fn's *Record, its Key, Value, Headers and the header values alias buffers owned by
// Records (or b itself) and are valid only during the call: copy what must outlive it,
// and modify none of it. Header keys are ordinary strings and can be kept.
//
// Records does not check the CRC (Validate does); it checks everything it decodes, the
// rules of Kafka's record iterator (DefaultRecordBatch, DefaultRecord.readFrom):
//   - the batch length and the codec (ErrCorrupt, ErrUnsupportedCodec);
//   - that the records decompress (ErrInvalid), within DefaultMaxDecompressed bytes
//     (ErrTooLarge);
//   - that each record's length varint is well formed and covers exactly its fields,
//     whose varints are well formed and whose key, value, header key and header value
//     lengths are -1 (null; not for header keys) or fit in the record (ErrInvalid);
//   - that offset deltas increase and do not pass LastOffsetDelta (ErrInvalid);
//   - that exactly NumRecords records fill the batch: no fewer (Kafka: "premature EOF")
//     and no bytes after the last (Kafka: "records still remaining"), ErrInvalid. A
//     compressed stream is read to its end, so its own checksums are checked too.
//
// After Validate, which ties NumRecords to LastOffsetDelta, the offset deltas are
// therefore exactly 0..NumRecords-1. Kafka renumbers a compressed batch whose inner
// offsets are off (recompressing it), and does not look at an uncompressed one's;
// floe stores batches as sent, so the produce path must refuse both.
//
// Memory does not grow with the batch: records stream through a 64 KiB window that
// grows only to hold one larger record, behind a decompressor that keeps only its
// codec's window. Raw snappy (one block, as franz-go and librdkafka write it) is the
// exception: its copies may reach back anywhere in the block, so it is decoded whole,
// after its declared size is checked against the limit. Snappy data may also be xerial
// framed (as the Java client writes it, and franz-go when it merges batches), decoded
// block by block; lz4 data is the LZ4 frame format Kafka uses since magic 1.
func Records(b []byte, fn func(*Record) error) error {
	return RecordsLimit(b, DefaultMaxDecompressed, fn)
}

// RecordsLimit is Records with maxDecompressed, instead of DefaultMaxDecompressed, as
// the limit in bytes on the decompressed size of the batch's records. Uncompressed
// batches are not limited: they are already in memory. A zstd frame whose declared
// window is larger than the limit is refused too (no default zstd level writes windows
// over 8 MiB).
func RecordsLimit(b []byte, maxDecompressed int, fn func(*Record) error) error {
	h, err := parseWhole(b)
	if err != nil {
		return err
	}
	codec := h.Codec()
	if !codec.valid() {
		return errorf(ErrUnsupportedCodec, "codec id %d", int8(codec))
	}
	if h.NumRecords < 0 {
		return errorf(ErrInvalid, "invalid record count %d", h.NumRecords)
	}
	st := iterPool.Get().(*iterState)
	defer st.release()
	var s recordStream
	defer st.close(&s)
	if err := st.open(&s, codec, b[HeaderSize:], maxDecompressed); err != nil {
		return err
	}
	return st.each(&h, &s, fn)
}

// iterState is what one Records call reuses from the last: the record handed to fn,
// its headers, the buffers records stream through, and the decompressors in use.
type iterState struct {
	rec    Record
	hdr    []RecordHeader
	buf    []byte   // raw snappy, decoded whole
	window []byte   // the stream's window over a decompressor
	keys   []string // header keys last seen, by position

	gzip   *gzipDecoder
	lz4    *lz4Decoder
	zstd   *zstdDecoder
	xerial xerialReader
}

// Header keys are remembered for the first maxCachedKeys positions, up to
// maxCachedKeyLen bytes long.
const (
	maxCachedKeys   = 16
	maxCachedKeyLen = 256
)

var iterPool = sync.Pool{New: func() any { return new(iterState) }}

func (st *iterState) release() {
	clear(st.hdr) // drop references into the caller's batch and header keys
	st.hdr = st.hdr[:0]
	if cap(st.hdr) > maxPooledHeaders {
		st.hdr = nil
	}
	st.rec = Record{}
	if cap(st.buf) > maxPooledBuffer {
		st.buf = nil
	}
	// st.window needs no bound here: close keeps only windows within it.
	iterPool.Put(st)
}

// key returns b as a string, reusing the key last seen at header position j: records
// of a batch usually carry the same header keys, which then cost no allocation.
func (st *iterState) key(j int, b []byte) string {
	if j >= maxCachedKeys || len(b) > maxCachedKeyLen {
		return string(b)
	}
	if j < len(st.keys) {
		if st.keys[j] != string(b) {
			st.keys[j] = string(b)
		}
		return st.keys[j]
	}
	k := string(b)
	st.keys = append(st.keys, k) // j == len(st.keys): positions come in order
	return k
}

// minRecordSize is the size of the smallest record: a one-byte length, attributes,
// timestamp delta, offset delta, key length, value length and header count.
const minRecordSize = 7

// each parses the records s streams, which must be exactly h.NumRecords of them, and
// calls fn (if not nil) with each.
func (st *iterState) each(h *Header, s *recordStream, fn func(*Record) error) error {
	if s.src == nil && int64(h.NumRecords) > int64(len(s.buf)/minRecordSize) {
		return errorf(ErrInvalid, "%d records cannot fit in %d bytes", h.NumRecords, len(s.buf))
	}
	prevDelta := int32(-1)
	for i := range h.NumRecords {
		start := s.pos
		body, err := s.next(i)
		if err != nil {
			return err
		}
		if err := st.parse(i, start, body, fn != nil); err != nil {
			return err
		}
		rec := &st.rec
		if rec.OffsetDelta <= prevDelta || rec.OffsetDelta > h.LastOffsetDelta {
			return errorf(ErrInvalid, "record %d: offset delta %d after %d (last offset delta %d)", i, rec.OffsetDelta, prevDelta, h.LastOffsetDelta)
		}
		prevDelta = rec.OffsetDelta
		if fn != nil {
			if err := fn(rec); err != nil {
				return err
			}
		}
	}
	return s.end(h.NumRecords)
}

// parse decodes record i, at byte start of the records, from body, the bytes its length
// prefix covers, into st.rec. Without headers it checks the headers but does not build
// them.
func (st *iterState) parse(i int32, start int, body []byte, headers bool) error {
	rr := reader{b: body}
	rec := &st.rec
	*rec = Record{
		Attributes:     rr.int8(),
		TimestampDelta: rr.varlong(),
		OffsetDelta:    rr.varint(),
		Key:            rr.bytes(),
		Value:          rr.bytes(),
	}
	n := rr.varint()
	if n < 0 || int(n) > (len(body)-rr.off)/2 { // a header takes at least two bytes
		return errorf(ErrInvalid, "record %d: invalid header count %d", i, n)
	}
	hdr := st.hdr[:0]
	for j := range int(n) {
		kn := rr.varint()
		if kn < 0 || int(kn) > len(body)-rr.off {
			rr.bad = true
			break
		}
		key := body[rr.off : rr.off+int(kn)]
		rr.off += int(kn)
		value := rr.bytes()
		if headers {
			hdr = append(hdr, RecordHeader{Key: st.key(j, key), Value: value})
		}
	}
	st.hdr = hdr
	if len(hdr) > 0 {
		rec.Headers = hdr
	}
	if rr.bad || rr.off != len(body) {
		return errorf(ErrInvalid, "record %d at byte %d: fields do not fill its length %d", i, start, len(body))
	}
	return nil
}
