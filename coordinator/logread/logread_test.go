package logread

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/kvindex"
	"github.com/floe-io/floe/record"
)

// batch builds a stored record batch of offsets [base, base+n) whose one
// or more records carry values of size bytes in all.
func batch(t *testing.T, base int64, n int, size int) []byte {
	t.Helper()
	recs := make([]record.Record, n)
	for i := range recs {
		recs[i] = record.Record{Key: fmt.Appendf(nil, "k%d", base+int64(i))}
	}
	recs[0].Value = make([]byte, size)
	b, err := record.Build(record.BuildOptions{BaseOffset: base, BaseTimestamp: 1000}, recs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// read is one GetRange call.
type read struct {
	key   string
	off   int64
	n     int64
	error bool
}

// objects is an Objects over a map, recording the reads.
type objects struct {
	data map[string][]byte
	fail map[string]error
	// failFrom, when above 0, fails the reads from the failFrom-th on.
	failFrom int
	reads    []read
}

func (o *objects) GetRange(_ context.Context, key string, off, n int64) ([]byte, error) {
	d, ok := o.data[key]
	switch {
	case len(o.reads) > 50:
		return nil, errors.New("objects: more than 50 reads, the reader loops")
	case o.fail[key] != nil, o.failFrom > 0 && len(o.reads)+1 >= o.failFrom:
		o.reads = append(o.reads, read{key, off, n, true})
		return nil, errStore
	case !ok || off < 0 || n <= 0 || off+n > int64(len(d)):
		o.reads = append(o.reads, read{key, off, n, true})
		return nil, fmt.Errorf("range [%d, +%d) of %q (%d bytes, present %v)", off, n, key, len(d), ok)
	}
	o.reads = append(o.reads, read{key, off, n, false})
	return slices.Clone(d[off : off+n]), nil
}

// errStore is the error of the reads objects fails.
var errStore = errors.New("store down")

// yielded is what an iteration yielded: each batch's base offset, or
// "error", in order.
type yielded struct {
	bases []int64
	data  [][]byte
	err   error
	errs  int
}

// yield returns a yield function recording into y that asks to stop
// after stopAfter batches (0: never).
func (y *yielded) yield(stopAfter int) func(kvindex.LogBatch, error) bool {
	return func(b kvindex.LogBatch, err error) bool {
		if err != nil {
			y.err = err
			y.errs++
			return false
		}
		y.bases = append(y.bases, b.BaseOffset)
		y.data = append(y.data, slices.Clone(b.Data))
		return stopAfter == 0 || len(y.bases) < stopAfter
	}
}

// TestSegmentBatches checks which batches SegmentBatches yields from a
// segment, how it reads the segment (8 MiB windows, and the rest of a
// batch larger than one), what it returns, and its errors.
func TestSegmentBatches(t *testing.T) {
	small := [][]byte{batch(t, 10, 3, 10), batch(t, 13, 2, 10), batch(t, 15, 5, 10)}
	big := [][]byte{batch(t, 100, 1, 5<<20), batch(t, 101, 1, 5<<20)}
	huge := [][]byte{batch(t, 200, 2, 9<<20), batch(t, 202, 1, 10)}
	// edge is one batch of SegmentWindow+1 bytes: its overhead over its
	// value does not change between sizes of the same varint length.
	over := len(batch(t, 300, 1, 8<<20)) - 8<<20
	edge := [][]byte{batch(t, 300, 1, SegmentWindow+1-over)}
	if len(edge[0]) != SegmentWindow+1 {
		t.Fatalf("edge batch of %d bytes, want %d", len(edge[0]), SegmentWindow+1)
	}
	seg := func(key string, bs [][]byte, base, last int64) coordapi.BatchCoord {
		return coordapi.BatchCoord{ObjectKey: key, ByteLength: int32(len(bytes.Join(bs, nil))), BaseOffset: base, LastOffset: last, Segment: true}
	}
	objs := map[string][]byte{
		"small":   bytes.Join(small, nil),
		"big":     bytes.Join(big, nil),
		"huge":    bytes.Join(huge, nil),
		"edge":    edge[0],
		"garbage": bytes.Repeat([]byte{0xff}, 100),
	}
	smallLen := int64(len(objs["small"]))
	for _, tc := range []struct {
		name      string
		seg       coordapi.BatchCoord
		offset    int64
		stopAfter int
		fail      bool
		failFrom  int
		wantBases []int64
		wantData  [][]byte
		wantReads []read
		wantNext  int64
		wantOK    bool
		wantErr   bool
	}{
		{"from the segment's base", seg("small", small, 10, 19), 10, 0, false, 0,
			[]int64{10, 13, 15}, small, []read{{"small", 0, smallLen, false}}, 20, true, false},
		{"below the segment's base", seg("small", small, 10, 19), 3, 0, false, 0,
			[]int64{10, 13, 15}, small, []read{{"small", 0, smallLen, false}}, 20, true, false},
		{"from a batch's last offset", seg("small", small, 10, 19), 12, 0, false, 0,
			[]int64{10, 13, 15}, small, []read{{"small", 0, smallLen, false}}, 20, true, false},
		{"from the next batch's base", seg("small", small, 10, 19), 13, 0, false, 0,
			[]int64{13, 15}, small[1:], []read{{"small", 0, smallLen, false}}, 20, true, false},
		{"from the segment's last offset", seg("small", small, 10, 19), 19, 0, false, 0,
			[]int64{15}, small[2:], []read{{"small", 0, smallLen, false}}, 20, true, false},
		{"past the batches, to the segment's last offset", seg("small", small, 10, 21), 20, 0, false, 0,
			nil, nil, []read{{"small", 0, smallLen, false}}, 22, true, false},
		{"stopped by yield", seg("small", small, 10, 19), 10, 2, false, 0,
			[]int64{10, 13}, small[:2], []read{{"small", 0, smallLen, false}}, 0, false, false},
		{"two windows", seg("big", big, 100, 101), 100, 0, false, 0,
			[]int64{100, 101}, big,
			[]read{{"big", 0, SegmentWindow, false}, {"big", int64(len(big[0])), int64(len(big[1])), false}}, 102, true, false},
		{"a batch larger than a window", seg("huge", huge, 200, 202), 201, 0, false, 0,
			[]int64{200, 202}, huge,
			[]read{{"huge", 0, SegmentWindow, false}, {"huge", SegmentWindow, int64(len(huge[0])) - SegmentWindow, false},
				{"huge", int64(len(huge[0])), int64(len(huge[1])), false}}, 203, true, false},
		{"reading the rest of a batch fails", seg("huge", huge, 200, 202), 200, 0, false, 2,
			nil, nil, []read{{"huge", 0, SegmentWindow, false}, {"huge", SegmentWindow, int64(len(huge[0])) - SegmentWindow, true}}, 0, false, true},
		{"a batch one byte larger than a window", seg("edge", edge, 300, 300), 300, 0, false, 0,
			[]int64{300}, edge, []read{{"edge", 0, SegmentWindow, false}, {"edge", SegmentWindow, 1, false}}, 301, true, false},
		{"a batch past the segment's end", coordapi.BatchCoord{ObjectKey: "huge", ByteLength: SegmentWindow + 10, BaseOffset: 200, LastOffset: 202, Segment: true}, 200, 0, false, 0,
			nil, nil, []read{{"huge", 0, SegmentWindow, false}}, 0, false, true},
		{"a read fails", seg("small", small, 10, 19), 10, 0, true, 0,
			nil, nil, []read{{"small", 0, smallLen, true}}, 0, false, true},
		{"no whole batch", coordapi.BatchCoord{ObjectKey: "garbage", ByteLength: 100, BaseOffset: 0, LastOffset: 9, Segment: true}, 0, 0, false, 0,
			nil, nil, []read{{"garbage", 0, 100, false}}, 0, false, true},
		{"empty segment", coordapi.BatchCoord{ObjectKey: "small", ByteLength: 0, BaseOffset: 5, LastOffset: 9, Segment: true}, 5, 0, false, 0,
			nil, nil, nil, 10, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := &objects{data: objs, fail: map[string]error{}, failFrom: tc.failFrom}
			if tc.fail {
				o.fail[tc.seg.ObjectKey] = errStore
			}
			var y yielded
			next, ok := SegmentBatches(context.Background(), o, tc.seg, tc.offset, y.yield(tc.stopAfter))
			if next != tc.wantNext || ok != tc.wantOK {
				t.Fatalf("SegmentBatches = %d, %v; want %d, %v", next, ok, tc.wantNext, tc.wantOK)
			}
			if (y.err != nil) != tc.wantErr || y.errs > 1 {
				t.Fatalf("SegmentBatches yielded %d errors (last %v), want error %v", y.errs, y.err, tc.wantErr)
			}
			if tc.wantErr && (tc.fail || tc.failFrom > 0) && !errors.Is(y.err, errStore) {
				t.Fatalf("SegmentBatches yielded %v, want it to wrap %v", y.err, errStore)
			}
			if !slices.Equal(y.bases, tc.wantBases) {
				t.Fatalf("SegmentBatches yielded bases %v, want %v", y.bases, tc.wantBases)
			}
			if !slices.EqualFunc(y.data, tc.wantData, bytes.Equal) {
				t.Fatalf("SegmentBatches yielded other bytes than the segment's batches")
			}
			if !slices.Equal(o.reads, tc.wantReads) {
				t.Fatalf("SegmentBatches read %+v, want %+v", o.reads, tc.wantReads)
			}
		})
	}
}

// finder is a Finder over a partition of coordinates: it answers up to
// per of them from the one holding the offset on (a segment alone),
// OFFSET_OUT_OF_RANGE below the log start or above the high watermark.
type finder struct {
	coords          []coordapi.BatchCoord
	logStart, hwm   int64
	per             int
	err             error
	calls           []int64
	wantPartitionOf coordapi.TopicID
}

func (f *finder) FindBatches(_ context.Context, req coordapi.FindBatchesRequest) (coordapi.FindBatchesResponse, error) {
	f.calls = append(f.calls, req.Offset)
	resp := coordapi.FindBatchesResponse{}
	if len(f.calls) > 50 {
		return resp, errors.New("finder: more than 50 calls, Batches loops")
	}
	resp.LogStartOffset, resp.HighWatermark = f.logStart, f.hwm
	if req.TopicID != f.wantPartitionOf || req.Partition != 3 || req.MaxBytes <= 0 {
		return resp, fmt.Errorf("request for %x/%d, max bytes %d", req.TopicID, req.Partition, req.MaxBytes)
	}
	switch {
	case f.err != nil:
		return resp, f.err
	case req.Offset < f.logStart || req.Offset > f.hwm:
		return resp, coordapi.Errorf(kerr.OffsetOutOfRange, "offset %d", req.Offset)
	}
	for _, c := range f.coords {
		switch {
		case c.LastOffset < req.Offset:
			continue
		case c.Segment && len(resp.Batches) > 0, len(resp.Batches) == f.per:
			return resp, nil
		}
		resp.Batches = append(resp.Batches, c)
		if c.Segment {
			break
		}
	}
	return resp, nil
}

// TestBatches checks the batches Batches yields over a partition of WAL
// batches and a segment, from offsets below the log start, inside a
// batch, inside the segment and at the end; and that it stops at the
// first error, or when the loop breaks.
func TestBatches(t *testing.T) {
	topic := coordapi.TopicID{7}
	w := [][]byte{batch(t, 0, 3, 5), batch(t, 0, 2, 7), batch(t, 0, 1, 9), batch(t, 0, 5, 11)}
	segBatches := [][]byte{batch(t, 11, 3, 4), batch(t, 14, 2, 4), batch(t, 16, 4, 4)}
	objs := map[string][]byte{
		"w1": bytes.Join(w[:2], nil), // 5-7, 8-9
		"w2": bytes.Join([][]byte{[]byte("pad"), w[2]}, nil),
		"s1": bytes.Join(segBatches, nil),
		"w3": w[3],
	}
	coords := []coordapi.BatchCoord{
		{ObjectKey: "w1", ByteOffset: 0, ByteLength: int32(len(w[0])), BaseOffset: 5, LastOffset: 7},
		{ObjectKey: "w1", ByteOffset: int64(len(w[0])), ByteLength: int32(len(w[1])), BaseOffset: 8, LastOffset: 9},
		{ObjectKey: "w2", ByteOffset: 3, ByteLength: int32(len(w[2])), BaseOffset: 10, LastOffset: 10},
		{ObjectKey: "s1", ByteLength: int32(len(objs["s1"])), BaseOffset: 11, LastOffset: 19, Segment: true},
		{ObjectKey: "w3", ByteLength: int32(len(w[3])), BaseOffset: 20, LastOffset: 24},
	}
	all := []int64{5, 8, 10, 11, 14, 16, 20}
	allData := [][]byte{w[0], w[1], w[2], segBatches[0], segBatches[1], segBatches[2], w[3]}
	dataFrom := func(i int) [][]byte { return allData[i:] }
	errFind := errors.New("coordinator down")
	errRead := errStore
	for _, tc := range []struct {
		name      string
		from      int64
		per       int
		findErr   error
		readFail  string
		stopAfter int
		wantBases []int64
		wantData  [][]byte
		wantCalls []int64
		wantErr   error // what the yielded error wraps; nil for none
	}{
		{"from the log start", 5, 2, nil, "", 0, all, allData, []int64{5, 10, 11, 20, 25}, nil},
		{"below the log start", 0, 2, nil, "", 0, all, allData, []int64{0, 5, 10, 11, 20, 25}, nil},
		{"one batch per answer", 5, 1, nil, "", 0, all, allData, []int64{5, 8, 10, 11, 20, 25}, nil},
		{"many batches per answer", 5, 100, nil, "", 0, all, allData, []int64{5, 11, 20, 25}, nil},
		{"inside a batch", 9, 2, nil, "", 0, all[1:], dataFrom(1), []int64{9, 11, 20, 25}, nil},
		{"inside the segment", 15, 2, nil, "", 0, all[4:], dataFrom(4), []int64{15, 20, 25}, nil},
		{"at the high watermark", 25, 2, nil, "", 0, nil, nil, []int64{25}, nil},
		{"above the high watermark", 26, 2, nil, "", 0, nil, nil, []int64{26}, kerr.OffsetOutOfRange},
		{"the finder fails", 5, 2, errFind, "", 0, nil, nil, []int64{5}, errFind},
		{"a WAL read fails", 5, 2, nil, "w2", 0, all[:2], dataFrom(0)[:2], []int64{5, 10}, errRead},
		{"a segment read fails", 5, 2, nil, "s1", 0, all[:3], dataFrom(0)[:3], []int64{5, 10, 11}, errRead},
		{"the loop breaks on a WAL batch", 5, 2, nil, "", 2, all[:2], dataFrom(0)[:2], []int64{5}, nil},
		{"the loop breaks in the segment", 5, 2, nil, "", 4, all[:4], dataFrom(0)[:4], []int64{5, 10, 11}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &finder{coords: coords, logStart: 5, hwm: 25, per: tc.per, err: tc.findErr, wantPartitionOf: topic}
			o := &objects{data: objs, fail: map[string]error{}}
			if tc.readFail != "" {
				o.fail[tc.readFail] = errStore
			}
			var (
				bases []int64
				data  [][]byte
				err   error
				errs  int
			)
			for b, e := range Batches(context.Background(), f, o, topic, 3, tc.from) {
				if len(bases)+errs > 100 {
					t.Fatalf("Batches yielded more than 100 times: %v, %d errors", bases, errs)
				}
				if e != nil {
					err = e
					errs++
					continue
				}
				bases = append(bases, b.BaseOffset)
				data = append(data, slices.Clone(b.Data))
				if len(bases) == tc.stopAfter {
					break
				}
			}
			if errs > 1 || !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
				t.Fatalf("Batches yielded %d errors (last %v), want one wrapping %v", errs, err, tc.wantErr)
			}
			if !slices.Equal(bases, tc.wantBases) {
				t.Fatalf("Batches yielded bases %v, want %v", bases, tc.wantBases)
			}
			if !slices.EqualFunc(data, tc.wantData, bytes.Equal) {
				t.Fatalf("Batches yielded other bytes than the partition's batches")
			}
			if !slices.Equal(f.calls, tc.wantCalls) {
				t.Fatalf("Batches asked from offsets %v, want %v", f.calls, tc.wantCalls)
			}
		})
	}
}
