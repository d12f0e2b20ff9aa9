package record

import (
	"sync"
)

// DefaultMaxDecompressed is the limit Records puts on the decompressed size of a batch's
// records: 64 MiB, 64 times Kafka's default message.max.bytes. Kafka itself streams
// records and has no such limit, but a broker that holds a whole batch in memory must
// not let a small compressed batch make it allocate without bound.
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
// calls fn with each in order, decompressing first if the batch is compressed. It stops
// at the first error fn returns and returns it unchanged.
//
// fn's *Record, its Key, Value, Headers and the header values alias buffers owned by
// Records (or b itself) and are valid only during the call: copy what must outlive it,
// and modify none of it. Header keys are ordinary strings and can be kept.
//
// Records does not check the CRC (Validate does); it checks everything it decodes:
// the batch length, the codec, that the records decompress within DefaultMaxDecompressed
// (ErrTooLarge), that each record's varints and lengths are well formed and its length
// matches its fields, that offset deltas increase and do not pass LastOffsetDelta, and
// that exactly NumRecords records fill the batch (ErrInvalid). After Validate, which
// ties NumRecords to LastOffsetDelta, the offset deltas are therefore 0..NumRecords-1:
// floe stores batches as sent, so it must refuse what Kafka would renumber.
//
// Snappy data may be one raw snappy block (as franz-go and librdkafka write it) or
// xerial framed (as the Java client writes it, and franz-go when it merges batches);
// lz4 data is the LZ4 frame format Kafka uses since magic 1.
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

	data := b[HeaderSize:]
	if codec != CodecNone {
		if data, err = st.decompress(codec, data, maxDecompressed); err != nil {
			return err
		}
	}
	return st.each(&h, data, fn)
}

// iterState is what one Records call reuses from the last: the record handed to fn,
// its headers, and the decompression buffer.
type iterState struct {
	rec  Record
	hdr  []RecordHeader
	buf  []byte
	keys []string // header keys last seen, by position
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

// each parses the records in data, which must hold exactly h.NumRecords of them.
func (st *iterState) each(h *Header, data []byte, fn func(*Record) error) error {
	if int64(h.NumRecords) > int64(len(data)/minRecordSize) {
		return errorf(ErrInvalid, "%d records cannot fit in %d bytes", h.NumRecords, len(data))
	}
	r := reader{b: data}
	rec := &st.rec
	prevDelta := int32(-1)
	for i := range h.NumRecords {
		start := r.off
		length := r.varint()
		if r.bad || length < minRecordSize-1 || int(length) > len(data)-r.off {
			return errorf(ErrInvalid, "record %d at byte %d: invalid record length %d", i, start, length)
		}
		body := r.off
		end := body + int(length)
		rr := reader{b: data[:end], off: body}
		*rec = Record{
			Attributes:     rr.int8(),
			TimestampDelta: rr.varlong(),
			OffsetDelta:    rr.varint(),
			Key:            rr.bytes(),
			Value:          rr.bytes(),
		}
		n := rr.varint()
		if n < 0 || int(n) > (end-rr.off)/2 { // a header takes at least two bytes
			return errorf(ErrInvalid, "record %d: invalid header count %d", i, n)
		}
		hdr := st.hdr[:0]
		for j := range int(n) {
			kn := rr.varint()
			if kn < 0 || int(kn) > end-rr.off {
				rr.bad = true
				break
			}
			hdr = append(hdr, RecordHeader{Key: st.key(j, data[rr.off:rr.off+int(kn)])})
			rr.off += int(kn)
			hdr[j].Value = rr.bytes()
		}
		st.hdr = hdr
		if n > 0 {
			rec.Headers = hdr
		}
		if rr.bad || rr.off != end {
			return errorf(ErrInvalid, "record %d at byte %d: fields do not fill its length %d", i, start, length)
		}
		if rec.OffsetDelta <= prevDelta || rec.OffsetDelta > h.LastOffsetDelta {
			return errorf(ErrInvalid, "record %d: offset delta %d after %d (last offset delta %d)", i, rec.OffsetDelta, prevDelta, h.LastOffsetDelta)
		}
		prevDelta = rec.OffsetDelta
		r.off = end
		if err := fn(rec); err != nil {
			return err
		}
	}
	if r.off != len(data) {
		return errorf(ErrInvalid, "%d bytes remain after the last of %d records", len(data)-r.off, h.NumRecords)
	}
	return nil
}
