package tiered

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/record"
)

// memRange is an in-memory RangeReader that records every read.
type memRange struct {
	mu      sync.Mutex
	objects map[string][]byte
	reads   []rangeCall
	err     error // returned by every read when set
	short   bool  // return one byte less than asked
	// block, when set, is waited on by reads at or past the key's blockAt.
	block   chan struct{}
	blockAt int64
	started chan struct{} // receives once per blocked read, when set
}

type rangeCall struct {
	key            string
	offset, length int64
}

func newMemRange() *memRange { return &memRange{objects: map[string][]byte{}} }

func (m *memRange) GetRange(ctx context.Context, key string, objectSize, offset, length int64) ([]byte, error) {
	m.mu.Lock()
	m.reads = append(m.reads, rangeCall{key, offset, length})
	obj, ok := m.objects[key]
	err, short, block, started := m.err, m.short, m.block, m.started
	m.mu.Unlock()
	if block != nil && offset >= m.blockAt {
		if started != nil {
			started <- struct{}{}
		}
		select {
		case <-block:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	switch {
	case err != nil:
		return nil, err
	case !ok:
		return nil, fmt.Errorf("no object %s", key)
	case objectSize != int64(len(obj)):
		return nil, fmt.Errorf("object %s has %d bytes, not %d", key, len(obj), objectSize)
	case offset < 0 || length < 0 || offset+length > objectSize:
		return nil, fmt.Errorf("read %d+%d outside the %d bytes of %s", offset, length, objectSize, key)
	}
	if short && length > 0 {
		length--
	}
	return obj[offset : offset+length : offset+length], nil
}

// calls returns the reads so far and forgets them.
func (m *memRange) calls() []rangeCall {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.reads
	m.reads = nil
	return c
}

// indexReads counts the reads at or past dataLen, in the indexes and trailer.
func indexReads(calls []rangeCall, dataLen int64) int {
	n := 0
	for _, c := range calls {
		if c.offset+c.length > dataLen {
			n++
		}
	}
	return n
}

// segCoord is the coordinate the coordinator answers for a segment.
func segCoord(key string, obj []byte, info Info) coordapi.BatchCoord {
	return coordapi.BatchCoord{ObjectKey: key, ObjectSize: int64(len(obj)), ByteLength: int32(info.DataLength),
		BaseOffset: info.BaseOffset, LastOffset: info.LastOffset, MaxTimestamp: info.MaxTimestamp, Segment: true}
}

// wantCoords returns the coordinates of the batches appended, as Reader answers them.
func wantCoords(t testing.TB, key string, obj []byte, in []appended) []coordapi.BatchCoord {
	t.Helper()
	var out []coordapi.BatchCoord
	pos := int64(0)
	for _, a := range in {
		h, err := record.ParseHeader(a.batch)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, coordapi.BatchCoord{ObjectKey: key, ObjectSize: int64(len(obj)), ByteOffset: pos, ByteLength: int32(len(a.batch)),
			BaseOffset: a.base, LastOffset: a.base + int64(h.LastOffsetDelta), MaxTimestamp: h.MaxTimestamp})
		pos += int64(len(a.batch))
	}
	return out
}

// findBatches is FindBatches' answer over all, by brute force.
func findBatches(all []coordapi.BatchCoord, offset int64, maxBytes int32) []coordapi.BatchCoord {
	var out []coordapi.BatchCoord
	total := int64(0)
	for _, bc := range all {
		if bc.LastOffset < offset {
			continue
		}
		if len(out) > 0 && total+int64(bc.ByteLength) > int64(maxBytes) {
			break
		}
		total += int64(bc.ByteLength)
		out = append(out, bc)
	}
	return out
}

// checkReads checks that every read lies within the data part or within the
// indexes and trailer, never across.
func checkReads(t *testing.T, calls []rangeCall, dataLen, size int64) {
	t.Helper()
	for _, c := range calls {
		if c.offset < dataLen && c.offset+c.length > dataLen || c.offset+c.length > size {
			t.Fatalf("read %d+%d crosses the data part's end %d (object %d bytes)", c.offset, c.length, dataLen, size)
		}
	}
}

func TestReaderBatches(t *testing.T) {
	ctx := context.Background()
	for _, tc := range roundTripCases() {
		t.Run(tc.name, func(t *testing.T) {
			obj, info, in := writeSegment(t, tc.base, tc.gap, tc.interval, tc.specs)
			m := newMemRange()
			m.objects["seg"] = obj
			r := NewReader(m, ReaderOptions{})
			seg := segCoord("seg", obj, info)
			all := wantCoords(t, "seg", obj, in)
			for _, maxBytes := range []int32{-1, 0, 1, 61, 500, 5000, 100_000, math.MaxInt32} {
				for off := info.BaseOffset - 2; off <= info.LastOffset; off++ {
					got, err := r.Batches(ctx, seg, off, maxBytes)
					if err != nil {
						t.Fatalf("Batches(%d, %d): %v", off, maxBytes, err)
					}
					if want := findBatches(all, off, maxBytes); !slices.Equal(got, want) {
						t.Fatalf("Batches(%d, %d) =\n%+v, want\n%+v", off, maxBytes, got, want)
					}
				}
			}
			for _, bc := range all {
				h, err := record.ParseHeader(obj[bc.ByteOffset : bc.ByteOffset+int64(bc.ByteLength)])
				if err != nil || h.BaseOffset != bc.BaseOffset || h.Size() != int(bc.ByteLength) {
					t.Fatalf("batch at %d: header %+v, %v; coordinate %+v", bc.ByteOffset, h, err, bc)
				}
			}
			calls := m.calls()
			checkReads(t, calls, info.DataLength, info.Size)
			if n := indexReads(calls, info.DataLength); n != 1 {
				t.Fatalf("%d index reads, want 1", n)
			}
			if _, err := r.Batches(ctx, seg, info.LastOffset+1, 1); err == nil {
				t.Fatal("Batches past the segment's last offset: no error")
			}
		})
	}
}

func TestReaderBatchAtTimestamp(t *testing.T) {
	ctx := context.Background()
	for _, tc := range roundTripCases() {
		t.Run(tc.name, func(t *testing.T) {
			obj, info, in := writeSegment(t, tc.base, tc.gap, tc.interval, tc.specs)
			m := newMemRange()
			m.objects["seg"] = obj
			r := NewReader(m, ReaderOptions{})
			seg := segCoord("seg", obj, info)
			all := wantCoords(t, "seg", obj, in)
			tss := []int64{0, info.MaxTimestamp, info.MaxTimestamp + 1, math.MaxInt64}
			for _, bc := range all {
				tss = append(tss, bc.MaxTimestamp-1, bc.MaxTimestamp, bc.MaxTimestamp+1)
			}
			froms := []int64{0, info.BaseOffset, info.LastOffset, info.LastOffset + 1}
			for i := 0; i < len(all); i += 7 {
				froms = append(froms, all[i].BaseOffset, all[i].LastOffset, all[i].LastOffset+1)
			}
			for _, from := range froms {
				for _, ts := range tss {
					got, ok, err := r.BatchAtTimestamp(ctx, seg, from, ts)
					if err != nil {
						t.Fatalf("BatchAtTimestamp(%d, %d): %v", from, ts, err)
					}
					i := slices.IndexFunc(all, func(bc coordapi.BatchCoord) bool { return bc.LastOffset >= from && bc.MaxTimestamp >= ts })
					switch {
					case i < 0 && ok:
						t.Fatalf("BatchAtTimestamp(%d, %d) = %+v, want none", from, ts, got)
					case i >= 0 && (!ok || got != all[i]):
						t.Fatalf("BatchAtTimestamp(%d, %d) = %+v, %v, want %+v", from, ts, got, ok, all[i])
					}
				}
			}
			calls := m.calls()
			checkReads(t, calls, info.DataLength, info.Size)
			if n := indexReads(calls, info.DataLength); n != 1 {
				t.Fatalf("%d index reads, want 1", n)
			}
		})
	}
}

// bigSegment writes a segment of n batches of about size bytes each, based at
// offset 100, with an index entry every interval bytes (0: the default).
func bigSegment(t testing.TB, n, size, interval int) ([]byte, Info, []appended) {
	t.Helper()
	specs := make([]spec, n)
	for i := range specs {
		specs[i] = spec{records: 4, valSize: size / 4, ts: int64(1000 + i)}
	}
	return writeSegment(t, 100, 0, interval, specs)
}

func TestReaderIndexReads(t *testing.T) {
	ctx := context.Background()
	obj, info, _ := bigSegment(t, 500, 100, 1) // an index of 500 entries, about 10 KB
	idxLen := info.Size - info.DataLength
	seg := segCoord("seg", obj, info)
	cases := []struct {
		name   string
		suffix int64
		hint   bool // through a segment coordinate, which says where the indexes start
		reads  []rangeCall
	}{
		{name: "coordinate: one exact read", suffix: 100, hint: true,
			reads: []rangeCall{{"seg", info.DataLength, idxLen}}},
		{name: "guess too small: two reads", suffix: 1000,
			reads: []rangeCall{{"seg", info.Size - 1000, 1000}, {"seg", info.DataLength, idxLen - 1000}}},
		{name: "guess below a trailer", suffix: 1,
			reads: []rangeCall{{"seg", info.Size - TrailerSize, TrailerSize}, {"seg", info.DataLength, idxLen - TrailerSize}}},
		{name: "guess large enough: one read", suffix: idxLen + 10,
			reads: []rangeCall{{"seg", info.Size - idxLen - 10, idxLen + 10}}},
		{name: "guess past the object: the whole object", suffix: 10 * info.Size,
			reads: []rangeCall{{"seg", 0, info.Size}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := newMemRange()
			m.objects["seg"] = obj
			r := NewReader(m, ReaderOptions{SuffixBytes: tc.suffix})
			for range 3 {
				var (
					idx *Index
					err error
				)
				if tc.hint {
					idx, err = r.segmentIndex(ctx, seg)
				} else {
					idx, err = r.Index(ctx, "seg", info.Size)
				}
				if err != nil {
					t.Fatal(err)
				}
				if idx.Trailer.LastOffset != info.LastOffset || len(idx.Offsets) != 500 {
					t.Fatalf("index of %d entries to %d", len(idx.Offsets), idx.Trailer.LastOffset)
				}
			}
			if got := m.calls(); !slices.Equal(got, tc.reads) {
				t.Fatalf("reads %+v, want %+v", got, tc.reads)
			}
		})
	}
}

func TestReaderIndexLoadedOnceConcurrently(t *testing.T) {
	ctx := context.Background()
	obj, info, in := bigSegment(t, 200, 300, 1000)
	m := newMemRange()
	m.objects["seg"] = obj
	// The first index read waits until every reader has started.
	const readers = 8
	m.block, m.blockAt, m.started = make(chan struct{}), info.DataLength, make(chan struct{}, readers)
	r := NewReader(m, ReaderOptions{})
	seg := segCoord("seg", obj, info)
	all := wantCoords(t, "seg", obj, in)
	var wg sync.WaitGroup
	errs := make(chan error, readers)
	for g := range readers {
		wg.Go(func() {
			for i := g; i < len(all); i += readers {
				got, err := r.Batches(ctx, seg, all[i].BaseOffset, 1)
				if err == nil && (len(got) != 1 || got[0] != all[i]) {
					err = fmt.Errorf("Batches(%d) = %+v, want %+v", all[i].BaseOffset, got, all[i])
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	<-m.started // the loader is reading
	close(m.block)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n := indexReads(m.calls(), info.DataLength); n != 1 {
		t.Fatalf("%d index reads by %d concurrent readers, want 1", n, readers)
	}
}

func TestReaderErrorsNotCached(t *testing.T) {
	ctx := context.Background()
	obj, info, _ := bigSegment(t, 10, 100, 0)
	m := newMemRange()
	m.objects["seg"] = obj
	r := NewReader(m, ReaderOptions{})
	seg := segCoord("seg", obj, info)

	canceled, cancel := context.WithCancel(ctx)
	cancel()
	m.block, m.blockAt = make(chan struct{}), 0 // reads wait for ctx
	if _, err := r.Batches(canceled, seg, 100, 1); !errors.Is(err, context.Canceled) {
		t.Fatalf("Batches with a canceled context: %v", err)
	}
	m.block = nil
	m.err = errors.New("s3 down")
	if _, err := r.Batches(ctx, seg, 100, 1); err == nil || !errors.Is(err, m.err) {
		t.Fatalf("Batches with a failing store: %v", err)
	}
	m.err = nil
	if got, err := r.Batches(ctx, seg, 100, 1); err != nil || len(got) != 1 {
		t.Fatalf("Batches once the store is back: %v, %v", got, err)
	}
	if n, _ := r.cachedIndexes(); n != 1 {
		t.Fatalf("%d cached indexes, want 1", n)
	}
}

func TestReaderIndexCacheBound(t *testing.T) {
	ctx := context.Background()
	m := newMemRange()
	var (
		segs  []coordapi.BatchCoord
		infos []Info
	)
	for i := range 3 {
		obj, info, _ := bigSegment(t, 100, 100, 200)
		key := fmt.Sprintf("seg-%d", i)
		m.objects[key] = obj
		segs, infos = append(segs, segCoord(key, obj, info)), append(infos, info)
	}
	idx, err := NewReader(m, ReaderOptions{}).segmentIndex(ctx, segs[0])
	if err != nil {
		t.Fatal(err)
	}
	one := indexSize("seg-0", idx)
	r := NewReader(m, ReaderOptions{IndexCacheBytes: 2*one + one/2}) // room for two
	m.calls()
	read := func(i int) {
		t.Helper()
		if _, err := r.Batches(ctx, segs[i], infos[i].BaseOffset, 1); err != nil {
			t.Fatal(err)
		}
	}
	loads := func() int {
		n := 0
		for _, c := range m.calls() {
			if c.offset >= infos[0].DataLength {
				n++
			}
		}
		return n
	}
	steps := []struct {
		seg   int
		loads int
	}{
		{0, 1}, {1, 1}, {0, 0}, // 0 is now the most recently used
		{2, 1},         // evicts 1
		{0, 0}, {2, 0}, // still cached
		{1, 1}, // evicts 0
		{0, 1},
	}
	for i, s := range steps {
		read(s.seg)
		if n := loads(); n != s.loads {
			t.Fatalf("step %d (segment %d): %d index loads, want %d", i, s.seg, n, s.loads)
		}
	}
	if n, b := r.cachedIndexes(); n != 2 || b > r.opts.IndexCacheBytes {
		t.Fatalf("%d indexes of %d bytes cached, bound %d", n, b, r.opts.IndexCacheBytes)
	}
	// An index larger than the whole bound is served, not cached.
	tiny := NewReader(m, ReaderOptions{IndexCacheBytes: 1})
	for range 2 {
		if _, err := tiny.Batches(ctx, segs[0], infos[0].BaseOffset, 1); err != nil {
			t.Fatal(err)
		}
	}
	if n := loads(); n != 2 {
		t.Fatalf("%d loads through a cache too small for the index, want 2", n)
	}
}

// batchAt returns the data position of the i-th batch of in.
func batchAt(in []appended, i int) int {
	pos := 0
	for _, a := range in[:i] {
		pos += len(a.batch)
	}
	return pos
}

func TestReaderCorrupt(t *testing.T) {
	ctx := context.Background()
	specs := make([]spec, 20)
	for i := range specs {
		specs[i] = spec{records: 3, valSize: 80, ts: int64(100 + i)}
	}
	obj, info, in := writeSegment(t, 50, 0, 400, specs)
	seg := segCoord("seg", obj, info)
	const k = 5 // the batch to break
	kpos, kbase := batchAt(in, k), in[k].base
	cases := []struct {
		name   string
		mutate func(obj []byte) []byte
		seg    func(seg coordapi.BatchCoord) coordapi.BatchCoord
		offset int64
		is     error // errors.Is the error, when set
	}{
		{name: "bad magic", offset: kbase, is: ErrCorrupt,
			mutate: func(b []byte) []byte { b[kpos+16] = 1; return b }},
		{name: "length past the data", offset: kbase, is: ErrCorrupt,
			mutate: func(b []byte) []byte {
				binary.BigEndian.PutUint32(b[kpos+8:], uint32(len(b)))
				return b
			}},
		{name: "length below a header", offset: kbase, is: ErrCorrupt,
			mutate: func(b []byte) []byte { binary.BigEndian.PutUint32(b[kpos+8:], 10); return b }},
		{name: "offsets not increasing", offset: kbase, is: ErrCorrupt,
			mutate: func(b []byte) []byte { binary.BigEndian.PutUint64(b[kpos:], uint64(in[k-1].base)); return b }},
		{name: "offset past the segment", offset: kbase, is: ErrCorrupt,
			mutate: func(b []byte) []byte { binary.BigEndian.PutUint64(b[kpos:], uint64(info.LastOffset)); return b }},
		{name: "negative last offset delta", offset: kbase, is: ErrCorrupt,
			mutate: func(b []byte) []byte { binary.BigEndian.PutUint32(b[kpos+23:], math.MaxUint32); return b }},
		{name: "first batch disagrees with the index", offset: 50, is: ErrCorrupt,
			mutate: func(b []byte) []byte { binary.BigEndian.PutUint64(b[0:], 51); return b }},
		{name: "last batch short of the trailer's last offset", offset: info.LastOffset - 1, is: ErrCorrupt,
			mutate: func(b []byte) []byte {
				binary.BigEndian.PutUint32(b[batchAt(in, len(in)-1)+23:], 1)
				return b
			}},
		{name: "truncated object", offset: 50, is: ErrCorrupt,
			mutate: func(b []byte) []byte { return b[1:] },
			seg:    func(s coordapi.BatchCoord) coordapi.BatchCoord { s.ObjectSize--; return s }},
		{name: "trailer only", offset: 50, is: ErrCorrupt,
			mutate: func(b []byte) []byte { return b[len(b)-TrailerSize:] },
			seg: func(s coordapi.BatchCoord) coordapi.BatchCoord {
				s.ObjectSize, s.ByteLength = TrailerSize, 0
				return s
			}},
		{name: "smaller than a trailer", offset: 50, is: ErrCorrupt,
			mutate: func(b []byte) []byte { return b[:10] },
			seg:    func(s coordapi.BatchCoord) coordapi.BatchCoord { s.ObjectSize, s.ByteLength = 10, 0; return s }},
		{name: "index flipped", offset: 50, is: ErrCorrupt,
			mutate: func(b []byte) []byte { b[info.DataLength+3] ^= 1; return b }},
		{name: "not a segment", offset: 50, is: ErrNotSegment,
			seg: func(s coordapi.BatchCoord) coordapi.BatchCoord { s.Segment = false; return s }},
		{name: "coordinate's data length", offset: 50,
			seg: func(s coordapi.BatchCoord) coordapi.BatchCoord { s.ByteLength--; return s }},
		{name: "bytes after the trailer", offset: 50, is: ErrCorrupt,
			mutate: func(b []byte) []byte { return append(b, 0) },
			seg:    func(s coordapi.BatchCoord) coordapi.BatchCoord { s.ObjectSize++; return s }},
		{name: "offset past the segment's last", offset: info.LastOffset + 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := newMemRange()
			c := bytes.Clone(obj)
			if tc.mutate != nil {
				c = tc.mutate(c)
			}
			m.objects["seg"] = c
			s := seg
			if tc.seg != nil {
				s = tc.seg(s)
			}
			if s.ObjectSize != int64(len(c)) {
				t.Fatalf("test case: object of %d bytes, coordinate says %d", len(c), s.ObjectSize)
			}
			r := NewReader(m, ReaderOptions{})
			_, err := r.Batches(ctx, s, tc.offset, math.MaxInt32)
			if err == nil || tc.is != nil && !errors.Is(err, tc.is) {
				t.Fatalf("Batches(%d): %v, want an error (%v)", tc.offset, err, tc.is)
			}
			if tc.offset <= info.LastOffset {
				if bc, ok, err := r.BatchAtTimestamp(ctx, s, tc.offset, 0); err == nil || tc.is != nil && !errors.Is(err, tc.is) {
					t.Fatalf("BatchAtTimestamp(%d, 0) = %+v, %v, %v; want an error (%v)", tc.offset, bc, ok, err, tc.is)
				}
			}
		})
	}
	t.Run("store failure", func(t *testing.T) {
		m := newMemRange()
		m.objects["seg"] = obj
		m.err = errors.New("s3 down")
		if _, err := NewReader(m, ReaderOptions{}).Batches(ctx, seg, 50, 1); !errors.Is(err, m.err) {
			t.Fatalf("Batches: %v", err)
		}
	})
	t.Run("short read", func(t *testing.T) {
		m := newMemRange()
		m.objects["seg"] = obj
		m.short = true
		if _, err := NewReader(m, ReaderOptions{}).Batches(ctx, seg, 50, 1); err == nil {
			t.Fatal("Batches over short reads: no error")
		}
	})
	t.Run("every data byte flipped", func(t *testing.T) {
		// Some flips (record bytes, CRCs, timestamps) are not a framing error;
		// none may panic, and no answer may leave the data part.
		for at := 0; at < int(info.DataLength); at += 3 {
			m := newMemRange()
			c := bytes.Clone(obj)
			c[at] ^= 0x41
			m.objects["seg"] = c
			r := NewReader(m, ReaderOptions{})
			for _, a := range in {
				checkAnswerSane(t, r, seg, a.base, info)
			}
		}
	})
}

// checkAnswerSane calls Batches and BatchAtTimestamp at offset and checks that
// whatever they answer without an error lies in the data part, in order.
func checkAnswerSane(t testing.TB, r *Reader, seg coordapi.BatchCoord, offset int64, info Info) {
	t.Helper()
	ctx := context.Background()
	got, err := r.Batches(ctx, seg, offset, 4096)
	if err == nil {
		end, last := int64(0), int64(-1)
		for _, bc := range got {
			if bc.ByteOffset < end || bc.ByteOffset+int64(bc.ByteLength) > info.DataLength || bc.BaseOffset <= last || bc.LastOffset < bc.BaseOffset {
				t.Fatalf("Batches(%d) answered %+v", offset, got)
			}
			end, last = bc.ByteOffset+int64(bc.ByteLength), bc.LastOffset
		}
		if len(got) == 0 {
			t.Fatalf("Batches(%d) answered nothing", offset)
		}
	}
	bc, ok, err := r.BatchAtTimestamp(ctx, seg, offset, 0)
	if err == nil && ok && (bc.ByteOffset+int64(bc.ByteLength) > info.DataLength || bc.LastOffset < offset) {
		t.Fatalf("BatchAtTimestamp(%d) answered %+v", offset, bc)
	}
}

// FuzzReader overwrites bytes of a segment's data part and reads it: no input
// may panic, and answers must stay in the data part.
func FuzzReader(f *testing.F) {
	specs := make([]spec, 12)
	for i := range specs {
		specs[i] = spec{codec: codecs[i%len(codecs)], records: 2, valSize: 60, ts: int64(100 + i)}
	}
	obj, info, in := writeSegment(f, 10, 1, 200, specs)
	f.Add(uint32(0), []byte{0xff}, int64(10))
	f.Add(uint32(8), []byte{0, 0, 0, 0}, int64(12))
	f.Add(uint32(batchAt(in, 3)), []byte{0, 0, 0, 0, 0, 0, 0, 0}, in[3].base)
	f.Fuzz(func(t *testing.T, at uint32, patch []byte, offset int64) {
		c := bytes.Clone(obj)
		copy(c[min(int64(at), info.DataLength):info.DataLength], patch)
		m := newMemRange()
		m.objects["seg"] = c
		checkAnswerSane(t, NewReader(m, ReaderOptions{}), segCoord("seg", c, info), offset, info)
	})
}

func BenchmarkReaderBatches(b *testing.B) {
	ctx := context.Background()
	for _, size := range []int{200, 16 << 10} {
		b.Run(fmt.Sprintf("batch=%d", size), func(b *testing.B) {
			obj, info, in := bigSegment(b, (8<<20)/size, size, 0)
			m := newMemRange()
			m.objects["seg"] = obj
			r := NewReader(m, ReaderOptions{})
			seg := segCoord("seg", obj, info)
			rng := rand.New(rand.NewPCG(1, 2))
			b.ReportAllocs()
			for b.Loop() {
				a := in[rng.IntN(len(in))]
				if _, err := r.Batches(ctx, seg, a.base, 1<<20); err != nil {
					b.Fatal(err)
				}
				m.calls()
			}
		})
	}
}
