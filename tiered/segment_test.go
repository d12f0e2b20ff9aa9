package tiered

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/floe-io/floe/record"
)

// spec describes one test batch.
type spec struct {
	codec   record.Codec
	records int
	valSize int
	ts      int64 // base timestamp; record i has ts+i
}

func buildBatch(t testing.TB, s spec, seed uint64) []byte {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 1))
	recs := make([]record.Record, s.records)
	for i := range recs {
		v := make([]byte, s.valSize)
		for j := range v {
			v[j] = byte('a' + rng.IntN(4)) // compressible, but not trivially
		}
		recs[i] = record.Record{Key: fmt.Appendf(nil, "k%d", i), Value: v, TimestampDelta: int64(i)}
	}
	b, err := record.Build(record.BuildOptions{Codec: s.codec, BaseTimestamp: s.ts, PartitionLeaderEpoch: -1, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, recs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// appended is one batch as given to Append.
type appended struct {
	batch []byte
	base  int64
	epoch int32
}

// writeSegment appends batches built from specs at contiguous offsets from base
// (plus gap offsets between batches) and finishes the segment.
func writeSegment(t testing.TB, base int64, gap int64, interval int, specs []spec) ([]byte, Info, []appended) {
	t.Helper()
	w, err := NewWriter(base, Options{IndexIntervalBytes: interval})
	if err != nil {
		t.Fatal(err)
	}
	var in []appended
	off := base
	for i, s := range specs {
		b := buildBatch(t, s, uint64(i))
		a := appended{batch: b, base: off, epoch: int32(i % 3)}
		if err := w.Append(b, a.base, a.epoch); err != nil {
			t.Fatalf("Append %d: %v", i, err)
		}
		in = append(in, a)
		off += int64(s.records) + gap
	}
	obj, info, err := w.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return obj, info, in
}

func openIndex(t testing.TB, obj []byte) *Index {
	t.Helper()
	tr, err := ParseTrailer(obj[len(obj)-TrailerSize:])
	if err != nil {
		t.Fatal(err)
	}
	idx, err := ParseIndexes(obj[tr.IndexPos():], tr)
	if err != nil {
		t.Fatal(err)
	}
	return idx
}

var codecs = []record.Codec{record.CodecNone, record.CodecGzip, record.CodecSnappy, record.CodecLZ4, record.CodecZstd}

func roundTripCases() []struct {
	name     string
	base     int64
	gap      int64
	interval int
	specs    []spec
} {
	type tc = struct {
		name     string
		base     int64
		gap      int64
		interval int
		specs    []spec
	}
	var cases []tc
	one := []spec{{codec: record.CodecNone, records: 1, valSize: 1, ts: 1000}}
	cases = append(cases, tc{"one batch", 0, 0, 0, one})
	for _, c := range codecs {
		var specs []spec
		for i := range 40 {
			specs = append(specs, spec{codec: c, records: 1 + i%7, valSize: 10 + 97*(i%11), ts: 1_700_000_000_000 + int64(i)*10})
		}
		cases = append(cases, tc{"increasing " + c.String(), 1000, 0, 0, specs})
		cases = append(cases, tc{"small interval " + c.String(), 5, 0, 100, specs})
	}
	// Timestamps that go back and forth, with gaps in offsets (a compacted segment).
	var specs []spec
	for i := range 60 {
		specs = append(specs, spec{codec: codecs[i%len(codecs)], records: 1 + i%3, valSize: 300, ts: int64(5000 + (i%5)*700 - i*3)})
	}
	cases = append(cases, tc{"jumbled timestamps with gaps", 77, 2, 500, specs})
	cases = append(cases, tc{"every batch indexed", 0, 0, 1, specs})
	cases = append(cases, tc{"one index entry", 0, 0, 1 << 30, specs})
	return cases
}

func TestRoundTrip(t *testing.T) {
	for _, tc := range roundTripCases() {
		t.Run(tc.name, func(t *testing.T) {
			obj, info, in := writeSegment(t, tc.base, tc.gap, tc.interval, tc.specs)
			idx := openIndex(t, obj)
			tr := idx.Trailer

			// Info and trailer agree with what was appended.
			lastIn := in[len(in)-1]
			wantLast := lastIn.base + int64(tc.specs[len(tc.specs)-1].records) - 1
			maxTS := int64(-1)
			dataLen := 0
			for i, a := range in {
				maxTS = max(maxTS, tc.specs[i].ts+int64(tc.specs[i].records)-1)
				dataLen += len(a.batch)
			}
			want := Info{BaseOffset: tc.base, LastOffset: wantLast, MaxTimestamp: maxTS, Size: int64(len(obj)), DataLength: int64(dataLen), BatchCount: len(in)}
			if info != want {
				t.Fatalf("Info = %+v, want %+v", info, want)
			}
			if tr.BaseOffset != tc.base || tr.LastOffset != wantLast || tr.MaxTimestamp != maxTS || tr.BatchCount != uint64(len(in)) ||
				tr.DataLength != uint64(dataLen) || tr.Size() != int64(len(obj)) {
				t.Fatalf("trailer %+v disagrees with %+v", tr, want)
			}

			// The data part is a Kafka log segment: exactly the appended batches,
			// patched, with valid CRCs.
			data := obj[:tr.DataLength]
			got, err := record.Split(data)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(in) {
				t.Fatalf("Split: %d batches, want %d", len(got), len(in))
			}
			positions := make([]int64, len(in))
			pos := int64(0)
			for i, b := range got {
				h, err := record.Validate(b)
				if err != nil {
					t.Fatalf("batch %d: %v", i, err)
				}
				if h.BaseOffset != in[i].base || h.PartitionLeaderEpoch != in[i].epoch {
					t.Fatalf("batch %d: base %d epoch %d, want %d %d", i, h.BaseOffset, h.PartitionLeaderEpoch, in[i].base, in[i].epoch)
				}
				wantB := bytes.Clone(in[i].batch)
				record.SetBaseOffset(wantB, in[i].base)
				record.SetPartitionLeaderEpoch(wantB, in[i].epoch)
				if !bytes.Equal(b, wantB) {
					t.Fatalf("batch %d differs from the appended one beyond base offset and epoch", i)
				}
				positions[i] = pos
				pos += int64(len(b))
			}
			rb, n, err := ReadBatches(data)
			if err != nil || n != len(data) || len(rb) != len(in) {
				t.Fatalf("ReadBatches: %d batches, %d bytes, %v", len(rb), n, err)
			}

			// Find, for every offset in the segment, lands at or before the batch
			// holding it, on a batch boundary, and reading from there reaches it.
			for i, a := range in {
				last := a.base + int64(tc.specs[i].records) - 1
				for off := a.base - tc.gap; off <= last; off++ {
					if off < tc.base {
						continue
					}
					p := idx.Find(off)
					if p > positions[i] {
						t.Fatalf("Find(%d) = %d, past its batch at %d", off, p, positions[i])
					}
					found := false
					for h := range Batches(data[p:]) {
						if h.BaseOffset <= off && off <= h.BaseOffset+int64(h.LastOffsetDelta) || h.BaseOffset > off {
							found = h.BaseOffset == a.base
							break
						}
					}
					if !found {
						t.Fatalf("reading from Find(%d) = %d does not reach the batch at %d", off, p, a.base)
					}
				}
			}
			if p := idx.Find(wantLast + 100); p != idx.Offsets[len(idx.Offsets)-1].Position {
				t.Fatalf("Find past the end = %d", p)
			}

			// FindTimestamp + SeekTimestamp: the first batch whose MaxTimestamp is
			// at least ts, for every ts around the batches' timestamps.
			tss := []int64{-2, -1, 0, maxTS, maxTS + 1, maxTS + 2}
			for _, s := range tc.specs {
				for d := int64(-1); d <= int64(s.records); d++ {
					tss = append(tss, s.ts+d)
				}
			}
			for _, ts := range tss {
				wantI := -1
				for i, s := range tc.specs {
					if s.ts+int64(s.records)-1 >= ts {
						wantI = i
						break
					}
				}
				off, p, ok := idx.FindTimestamp(ts)
				if ok != (wantI >= 0) {
					t.Fatalf("FindTimestamp(%d) ok = %v, want %v", ts, ok, wantI >= 0)
				}
				if !ok {
					continue
				}
				if p > positions[wantI] || off > in[wantI].base {
					t.Fatalf("FindTimestamp(%d) = %d at %d, past the answer %d at %d", ts, off, p, in[wantI].base, positions[wantI])
				}
				gotOff, gotPos, ok := SeekTimestamp(data[p:], p, ts)
				if !ok || gotOff != in[wantI].base || gotPos != positions[wantI] {
					t.Fatalf("SeekTimestamp(%d) = %d at %d (%v), want %d at %d", ts, gotOff, gotPos, ok, in[wantI].base, positions[wantI])
				}
			}
		})
	}
}

func TestIndexSparse(t *testing.T) {
	var specs []spec
	for i := range 200 {
		specs = append(specs, spec{codec: record.CodecNone, records: 1, valSize: 200, ts: int64(i)})
	}
	obj, _, _ := writeSegment(t, 0, 0, 4096, specs)
	idx := openIndex(t, obj)
	// Each batch is a little over 200 bytes: about one entry per 4096/260 batches.
	if n := len(idx.Offsets); n < 5 || n > 15 {
		t.Fatalf("%d offset index entries for %d data bytes", n, idx.Trailer.DataLength)
	}
	if len(idx.Times) != len(idx.Offsets) {
		t.Fatalf("%d time entries, %d offset entries: timestamps rise at every entry", len(idx.Times), len(idx.Offsets))
	}
	for i := 1; i < len(idx.Offsets); i++ {
		if d := idx.Offsets[i].Position - idx.Offsets[i-1].Position; d < 4096 || d > 4096+300 {
			t.Fatalf("entries %d and %d are %d bytes apart", i-1, i, d)
		}
	}
}

func TestAppendRefuses(t *testing.T) {
	good := buildBatch(t, spec{records: 3, valSize: 5, ts: 1}, 0)
	bad := bytes.Clone(good)
	bad[len(bad)-1] ^= 1
	for _, tc := range []struct {
		name  string
		setup []int64 // base offsets appended first
		batch []byte
		base  int64
	}{
		{"corrupt crc", nil, bad, 10},
		{"not a batch", nil, good[:30], 10},
		{"below the segment base", nil, good, 9},
		{"overlapping", []int64{10}, good, 12},
		{"repeated", []int64{10}, good, 10},
		{"too far from the base", nil, good, 10 + 1<<32},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, err := NewWriter(10, Options{})
			if err != nil {
				t.Fatal(err)
			}
			for _, b := range tc.setup {
				if err := w.Append(good, b, 0); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Append(tc.batch, tc.base, 0); !errors.Is(err, ErrInvalidBatch) {
				t.Fatalf("Append = %v, want ErrInvalidBatch", err)
			}
			// The Writer is still usable and the refused batch left no trace.
			if err := w.Append(good, 100, 0); err != nil {
				t.Fatal(err)
			}
			obj, info, err := w.Finish()
			if err != nil {
				t.Fatal(err)
			}
			if info.BatchCount != len(tc.setup)+1 || info.LastOffset != 102 {
				t.Fatalf("Info %+v", info)
			}
			openIndex(t, obj)
		})
	}
	w, _ := NewWriter(0, Options{})
	if _, _, err := w.Finish(); err == nil {
		t.Fatal("Finish of an empty segment succeeded")
	}
	if _, err := NewWriter(-1, Options{}); err == nil {
		t.Fatal("NewWriter(-1) succeeded")
	}
	w, _ = NewWriter(0, Options{})
	in := bytes.Clone(good)
	if err := w.Append(in, 5, 9); err != nil || !bytes.Equal(in, good) {
		t.Fatalf("Append = %v, or it modified its input", err)
	}
}

// parseAll reads obj as a reader would: trailer, then indexes, then the batches.
func parseAll(obj []byte) error {
	if len(obj) < TrailerSize {
		_, err := ParseTrailer(obj)
		if err == nil {
			return errors.New("trailer parsed from a short object")
		}
		return err
	}
	tr, err := ParseTrailer(obj[len(obj)-TrailerSize:])
	if err != nil {
		return err
	}
	if tr.Size() != int64(len(obj)) {
		return corruptf("object of %d bytes, trailer says %d", len(obj), tr.Size())
	}
	idx, err := ParseIndexes(obj[tr.IndexPos():], tr)
	if err != nil {
		return err
	}
	idx.Find(tr.LastOffset)
	idx.FindTimestamp(tr.MaxTimestamp)
	_, _, err = ReadBatches(obj[:tr.DataLength])
	return err
}

func TestCorruption(t *testing.T) {
	var specs []spec
	for i := range 30 {
		specs = append(specs, spec{codec: codecs[i%len(codecs)], records: 2, valSize: 100, ts: int64(100 + i)})
	}
	obj, _, _ := writeSegment(t, 50, 0, 300, specs)
	if err := parseAll(obj); err != nil {
		t.Fatal(err)
	}
	tr, _ := ParseTrailer(obj)

	t.Run("truncated", func(t *testing.T) {
		for n := range len(obj) {
			if err := parseAll(obj[:n]); err == nil {
				t.Fatalf("object cut to %d of %d bytes parsed", n, len(obj))
			}
			// Cutting the front (a suffix read that is too short) is refused too.
			if n > 0 {
				if _, err := ParseIndexes(obj[n:], tr); err == nil && int64(n) != tr.IndexPos() {
					t.Fatalf("indexes parsed from a suffix at %d", n)
				}
			}
		}
	})
	t.Run("flipped", func(t *testing.T) {
		for at := int(tr.IndexPos()); at < len(obj); at++ {
			for _, bit := range []byte{0x01, 0x80} {
				c := bytes.Clone(obj)
				c[at] ^= bit
				err := parseAll(c)
				if err == nil {
					t.Fatalf("byte %d ^ %#x: parsed", at, bit)
				}
				if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrUnsupportedVersion) {
					t.Fatalf("byte %d ^ %#x: %v is neither ErrCorrupt nor ErrUnsupportedVersion", at, bit, err)
				}
			}
		}
	})
	t.Run("flipped data", func(t *testing.T) {
		// The data part carries the batches' own CRCs, outside the base offset
		// and leader epoch, which ReadBatches checks.
		for at := 0; at < int(tr.DataLength); at += 7 {
			c := bytes.Clone(obj)
			c[at] ^= 0x10
			_ = parseAll(c) // must not panic; some flips (offsets, epochs) are undetectable
		}
	})
	t.Run("wrong trailer given", func(t *testing.T) {
		other := tr
		other.MaxTimestamp--
		if _, err := ParseIndexes(obj[tr.IndexPos():], other); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("ParseIndexes with another trailer: %v", err)
		}
	})
}

// resign rewrites obj's CRC so that corruption tests reach the entry checks.
func resign(obj []byte) {
	tpos := len(obj) - TrailerSize
	ipos := binary.BigEndian.Uint64(obj[tpos+offOffsetIndexPos:])
	binary.BigEndian.PutUint32(obj[tpos+offCRC:], trailerCRC(obj[ipos:tpos], obj[tpos:]))
}

func TestBadEntries(t *testing.T) {
	var specs []spec
	for i := range 20 {
		specs = append(specs, spec{records: 2, valSize: 100, ts: int64(100 + i)})
	}
	obj, _, _ := writeSegment(t, 50, 0, 300, specs)
	tr, _ := ParseTrailer(obj)
	oi, ti := int(tr.OffsetIndexPos), int(tr.TimeIndexPos)
	if tr.OffsetIndexLen < 3*OffsetEntrySize || tr.TimeIndexLen < 3*TimeEntrySize {
		t.Fatalf("want at least 3 entries in each index: %+v", tr)
	}
	put32 := func(at int, v uint32) func([]byte) { return func(b []byte) { binary.BigEndian.PutUint32(b[at:], v) } }
	put64 := func(at int, v uint64) func([]byte) { return func(b []byte) { binary.BigEndian.PutUint64(b[at:], v) } }
	tp := len(obj) - TrailerSize
	for _, tc := range []struct {
		name string
		edit func([]byte)
	}{
		{"first position not 0", put32(oi+4, 1)},
		{"offsets out of order", put32(oi+OffsetEntrySize, 0)},
		{"positions out of order", put32(oi+2*OffsetEntrySize+4, 1)},
		{"position past the data", put32(oi+2*OffsetEntrySize+4, uint32(tr.DataLength))},
		{"offset past the last", put32(oi+2*OffsetEntrySize, uint32(tr.LastOffset-tr.BaseOffset+1))},
		{"times out of order", put64(ti+TimeEntrySize, 0)},
		{"time above the max", put64(ti+2*TimeEntrySize, uint64(tr.MaxTimestamp+1))},
		{"time offset not indexed", put32(ti+TimeEntrySize+8, 1)},
		{"max timestamp below -1", put64(tp+offMaxTimestamp, 1<<63)},
		{"last below base", put64(tp+offLastOffset, 1)},
		{"no batches", put64(tp+offBatchCount, 0)},
		{"data length off", put64(tp+offDataLength, tr.DataLength-1)},
		{"index length odd", put64(tp+offOffsetIndexLen, tr.OffsetIndexLen-1)},
		{"time index pos off", put64(tp+offTimeIndexPos, tr.TimeIndexPos+1)},
		{"huge lengths", put64(tp+offTimeIndexLen, 1<<62)},
		{"version 2", put32(tp+offVersion, 2)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := bytes.Clone(obj)
			tc.edit(c)
			resign(c)
			if err := parseAll(c); err == nil {
				t.Fatal("parsed")
			}
		})
	}
}

func FuzzParseTrailer(f *testing.F) {
	obj, _, _ := writeSegment(f, 3, 0, 200, []spec{{records: 3, valSize: 90, ts: 5}, {records: 2, valSize: 300, ts: 9}, {records: 1, valSize: 1, ts: 7}})
	f.Add(obj[len(obj)-TrailerSize:])
	f.Add(obj)
	f.Add([]byte(Magic))
	f.Fuzz(func(t *testing.T, b []byte) {
		tr, err := ParseTrailer(b)
		if err != nil {
			return
		}
		if tr.Size() < TrailerSize || tr.IndexPos() < 0 || uint64(tr.IndexPos()) != tr.DataLength {
			t.Fatalf("accepted trailer %+v", tr)
		}
		// Re-encoding gives the same bytes.
		if got := appendTrailer(nil, &tr); !bytes.Equal(got, b[len(b)-TrailerSize:]) {
			t.Fatalf("re-encoded trailer differs")
		}
	})
}

func FuzzParseIndexes(f *testing.F) {
	obj, _, _ := writeSegment(f, 3, 0, 200, []spec{{records: 3, valSize: 90, ts: 5}, {records: 2, valSize: 300, ts: 9}, {records: 1, valSize: 1, ts: 7}, {records: 4, valSize: 250, ts: 20}})
	tr, _ := ParseTrailer(obj)
	f.Add(obj[tr.IndexPos():])
	f.Fuzz(func(t *testing.T, b []byte) {
		// Re-sign the fuzzed bytes so the fuzzer gets past the CRC to the entry checks.
		if len(b) >= TrailerSize {
			b = bytes.Clone(b)
			ilen := len(b) - TrailerSize
			tp := b[ilen:]
			if string(tp[offMagic:]) == Magic {
				binary.BigEndian.PutUint32(tp[offCRC:], trailerCRC(b[:ilen], tp))
			}
		}
		tr, err := ParseTrailer(b)
		if err != nil {
			return
		}
		idx, err := ParseIndexes(b, tr)
		if err != nil {
			return
		}
		if len(idx.Offsets) == 0 || idx.Offsets[0].Position != 0 {
			t.Fatalf("accepted index %+v", idx)
		}
		for _, off := range []int64{-1, 0, tr.BaseOffset, tr.LastOffset, tr.LastOffset + 1} {
			if p := idx.Find(off); p < 0 || uint64(p) >= tr.DataLength {
				t.Fatalf("Find(%d) = %d", off, p)
			}
		}
		for _, ts := range []int64{-1, 0, tr.MaxTimestamp, tr.MaxTimestamp + 1} {
			if _, p, ok := idx.FindTimestamp(ts); ok && (p < 0 || uint64(p) >= tr.DataLength) {
				t.Fatalf("FindTimestamp(%d) = %d", ts, p)
			}
		}
	})
}

// TestAppendLogAppendTime: the segment's copy of the batch is stamped with
// the append time (attribute bit, max timestamp, a valid CRC), the time
// index and trailer use it, and the caller's bytes are left alone.
func TestAppendLogAppendTime(t *testing.T) {
	b := buildBatch(t, spec{codec: record.CodecLZ4, records: 3, valSize: 10, ts: 1000}, 1)
	orig := bytes.Clone(b)
	w, err := NewWriter(7, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.AppendLogAppendTime(b, 7, 2, -5); !errors.Is(err, ErrInvalidBatch) {
		t.Fatalf("negative append time: %v", err)
	}
	const at = 9_000
	if err := w.AppendLogAppendTime(b, 7, 2, at); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, orig) {
		t.Fatal("AppendLogAppendTime modified its input")
	}
	obj, info, err := w.Finish()
	if err != nil {
		t.Fatal(err)
	}
	if info.MaxTimestamp != at {
		t.Errorf("segment max timestamp %d, want %d", info.MaxTimestamp, at)
	}
	tr, err := ParseTrailer(obj)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := ParseIndexes(obj[tr.IndexPos():], tr)
	if err != nil {
		t.Fatal(err)
	}
	if len(idx.Times) != 1 || idx.Times[0].Timestamp != at {
		t.Errorf("time index %+v, want one entry at %d", idx.Times, at)
	}
	got := obj[:tr.DataLength]
	h, err := record.Validate(got)
	if err != nil {
		t.Fatal(err)
	}
	if !h.LogAppendTime() || h.MaxTimestamp != at || h.BaseOffset != 7 || h.PartitionLeaderEpoch != 2 {
		t.Errorf("stored header %+v, want LogAppendTime at %d, base 7, epoch 2", h, at)
	}
}
