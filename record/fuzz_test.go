package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
)

// fuzzLimit bounds decompression in the fuzzers, so that no input can make them
// allocate more than a few MiB.
const fuzzLimit = 1 << 20

// seedBatches are valid batches of every codec and framing, for the fuzzers' corpora.
func seedBatches(tb testing.TB) [][]byte {
	var out [][]byte
	sets := [][]Record{
		{{}},
		{{Key: []byte("k"), Value: []byte("v"), Headers: []RecordHeader{{Key: "h", Value: nil}}}},
		sampleRecords(5, 30, 40),
		sampleRecords(20, 600, 41),
	}
	for _, recs := range sets {
		for _, codec := range allCodecs {
			out = append(out, mustBuild(tb, BuildOptions{Codec: codec, BaseTimestamp: 1000, ProducerID: -1}, recs))
			if codec == CodecSnappy {
				out = append(out, mustBuild(tb, BuildOptions{Codec: codec, SnappyXerial: true}, recs))
			}
		}
	}
	return out
}

func FuzzValidate(f *testing.F) {
	for _, b := range seedBatches(f) {
		f.Add(b, false)
	}
	// With fixCRC, the fuzzer's mutations get past the CRC to the checks behind it.
	f.Fuzz(func(t *testing.T, b []byte, fixCRC bool) {
		if fixCRC && len(b) >= HeaderSize {
			putCRC(b)
		}
		h, err := Validate(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrUnsupportedMagic) && !errors.Is(err, ErrUnsupportedCodec) {
				t.Fatalf("Validate: error %v matches no sentinel", err)
			}
			return
		}
		if h.Size() != len(b) || h.Magic != 2 || h.NumRecords != h.LastOffsetDelta+1 || checksum(b) != h.CRC {
			t.Fatalf("Validate accepted %+v for %d bytes", h, len(b))
		}
		if ph, err := ParseHeader(b); err != nil || ph != h {
			t.Fatalf("ParseHeader disagrees: %+v, %v", ph, err)
		}
		// A valid batch stays valid through the wire patches.
		c := bytes.Clone(b)
		SetBaseOffset(c, 12345)
		SetPartitionLeaderEpoch(c, 6)
		SetLogAppendTime(c, 99)
		if _, err := Validate(c); err != nil {
			t.Fatalf("patched batch: %v", err)
		}
		errFn := RecordsLimit(b, fuzzLimit, func(*Record) error { return nil })
		if errNil := RecordsLimit(b, fuzzLimit, nil); (errFn == nil) != (errNil == nil) {
			t.Fatalf("Records with fn: %v; without: %v", errFn, errNil)
		}
	})
}

// FuzzRecords decodes fuzzed records under a well-formed header, so that the fuzzer
// spends its time in the decompressors and the record parser rather than on the CRC.
func FuzzRecords(f *testing.F) {
	for _, b := range seedBatches(f) {
		h, _ := ParseHeader(b)
		f.Add(uint8(h.Codec()), h.NumRecords, h.LastOffsetDelta, b[HeaderSize:])
	}
	f.Fuzz(func(t *testing.T, codec uint8, n, lastDelta int32, payload []byte) {
		h := Header{Attributes: int16(codec & AttrCodecMask), NumRecords: n, LastOffsetDelta: lastDelta, ProducerID: -1}
		b := rawBatch(h, payload)
		var (
			recs  []Record
			prev  = int32(-1)
			bytes int
		)
		err := RecordsLimit(b, fuzzLimit, func(r *Record) error {
			if r.OffsetDelta <= prev || r.OffsetDelta > lastDelta {
				t.Fatalf("offset delta %d after %d, last %d", r.OffsetDelta, prev, lastDelta)
			}
			prev = r.OffsetDelta
			bytes += len(r.Key) + len(r.Value)
			recs = append(recs, cloneRecord(r))
			return nil
		})
		// The check alone agrees, and its window stays within the limit whatever
		// lengths the records claim.
		st := new(iterState)
		var s recordStream
		errNil := errorf(ErrInvalid, "invalid record count %d", n) // as RecordsLimit checks first
		if n >= 0 {
			if errNil = st.open(&s, h.Codec(), payload, fuzzLimit); errNil == nil {
				errNil = st.each(&h, &s, nil)
			}
		}
		if s.src != nil && cap(s.buf) > max(windowSize, 2*(fuzzLimit+1)) {
			t.Fatalf("window of %d bytes under a limit of %d", cap(s.buf), fuzzLimit)
		}
		st.close(&s)
		if h.Codec().valid() && (err == nil) != (errNil == nil) {
			t.Fatalf("Records with fn: %v; without: %v", err, errNil)
		}
		if err != nil {
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrUnsupportedCodec) && !errors.Is(err, ErrTooLarge) {
				t.Fatalf("Records: error %v matches no expected sentinel", err)
			}
			return
		}
		if len(recs) != int(n) {
			t.Fatalf("%d records, header says %d", len(recs), n)
		}
		if bytes > fuzzLimit+len(payload) {
			t.Fatalf("decoded %d bytes of keys and values past the limit", bytes)
		}
		maxDelta := int64(-1)
		for _, r := range recs {
			maxDelta = max(maxDelta, r.TimestampDelta)
		}
		if n == 0 || maxDelta < 0 { // Build refuses batches whose timestamps are all before the base
			return
		}
		// What decoded re-encodes to a batch that decodes the same.
		opts := BuildOptions{Codec: h.Codec(), ProducerID: -1}
		rb := mustBuild(t, opts, recs)
		if _, err := Validate(rb); err != nil {
			t.Fatalf("rebuilt batch: %v", err)
		}
		got, err := collect(rb)
		if err != nil {
			t.Fatalf("rebuilt batch: %v", err)
		}
		if err := sameRecords(got, numbered(recs)); err != nil {
			t.Fatalf("rebuilt batch: %v", err)
		}
	})
}

func FuzzSplit(f *testing.F) {
	seeds := seedBatches(f)
	f.Add([]byte{})
	f.Add(bytes.Join(seeds[:3], nil))
	f.Add(bytes.Join(seeds, nil))
	f.Add(append(bytes.Clone(seeds[0]), 0, 0, 0))
	f.Fuzz(func(t *testing.T, b []byte) {
		batches, err := Split(b)
		var iterated [][]byte
		var iterErr error
		for batch, err := range Batches(b) {
			if err != nil {
				iterErr = err
				break
			}
			iterated = append(iterated, batch)
		}
		if (err == nil) != (iterErr == nil) {
			t.Fatalf("Split error %v, Batches error %v", err, iterErr)
		}
		if err != nil {
			if !errors.Is(err, ErrCorrupt) || batches != nil {
				t.Fatalf("Split: %v with %d batches", err, len(batches))
			}
			return
		}
		if !bytes.Equal(bytes.Join(batches, nil), b) || len(iterated) != len(batches) {
			t.Fatal("batches do not add up to the input")
		}
		for _, batch := range batches {
			if len(batch) < lengthOverhead+minLegacyLength || int(binary.BigEndian.Uint32(batch[offBatchLength:]))+lengthOverhead != len(batch) {
				t.Fatalf("misframed batch of %d bytes", len(batch))
			}
			_, _ = Validate(batch)
		}
	})
}

// FuzzCompressedRecords compresses fuzzed record bytes with each codec's real
// compressor, so that the fuzzer's records reach the streaming record parser behind a
// sound stream (as a producer with a bug would send them): every codec must then
// decide exactly as for the same records uncompressed, record for record.
func FuzzCompressedRecords(f *testing.F) {
	for _, b := range seedBatches(f) {
		h, _ := ParseHeader(b)
		if h.Codec() == CodecNone {
			f.Add(h.NumRecords, b[HeaderSize:])
		}
	}
	f.Add(int32(2), rawRecords(numbered([]Record{{Value: bytes.Repeat([]byte("v"), 70_000)}, {Key: []byte("k")}})...))
	f.Fuzz(func(t *testing.T, n int32, payload []byte) {
		if len(payload) > fuzzLimit {
			return
		}
		h := Header{NumRecords: n, LastOffsetDelta: n - 1, ProducerID: -1}
		want, wantErr := collectLimit(rawBatch(h, payload), fuzzLimit)
		for _, c := range []struct {
			codec  Codec
			xerial bool
		}{{CodecGzip, false}, {CodecSnappy, false}, {CodecSnappy, true}, {CodecLZ4, false}, {CodecZstd, false}} {
			data, err := compress(nil, c.codec, payload, c.xerial)
			if err != nil {
				t.Fatal(err)
			}
			ch := h
			ch.Attributes = int16(c.codec)
			b := rawBatch(ch, data)
			got, err := collectLimit(b, fuzzLimit)
			if (err == nil) != (wantErr == nil) || (err != nil && !errors.Is(err, ErrInvalid)) {
				t.Fatalf("%s: %v; uncompressed: %v", c.codec, err, wantErr)
			}
			if err == nil {
				if err := sameRecords(got, want); err != nil {
					t.Fatalf("%s: %v", c.codec, err)
				}
			}
			if errNil := RecordsLimit(b, fuzzLimit, nil); (errNil == nil) != (err == nil) {
				t.Fatalf("%s: Records with fn: %v; without: %v", c.codec, err, errNil)
			}
		}
	})
}

// collectLimit is collect with a decompression limit.
func collectLimit(b []byte, limit int) ([]Record, error) {
	var out []Record
	err := RecordsLimit(b, limit, func(r *Record) error {
		out = append(out, cloneRecord(r))
		return nil
	})
	return out, err
}

// FuzzParseRecord: any bytes decode or fail, never panic, and a record that
// decodes has key and value within its bytes.
func FuzzParseRecord(f *testing.F) {
	f.Add([]byte{0x0c, 0, 0, 0, 2, 'k', 2, 'v', 0})
	f.Add([]byte{0x08, 0, 0, 0, 1, 1, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := ParseRecord(b)
		if err == nil && len(r.Key)+len(r.Value) > len(b) {
			t.Fatalf("key %d and value %d bytes from %d", len(r.Key), len(r.Value), len(b))
		}
	})
}
