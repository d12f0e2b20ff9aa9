package rowscan

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/cockroachdb/pebble"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/coordinator/layout"
	"github.com/floe-io/floe/internal/testkit"
	"github.com/floe-io/floe/kvindex"
)

var topic = coordapi.TopicID{1, 2, 3}

// bc is a WAL batch coordinate of offsets [base, last] at [off, +n) of its
// object, with max timestamp 1000+last.
func bc(base, last, off int64, n int32) coordapi.BatchCoord {
	return coordapi.BatchCoord{ByteOffset: off, ByteLength: n, BaseOffset: base, LastOffset: last, MaxTimestamp: 1000 + last}
}

// segRow is the fixture's segment row: offsets 20-29 of object 3.
var segRow = layout.SegmentRow{Object: 3, Base: 20, Batches: 5, DataLength: 1000, MaxTimestamp: 5000, TSOffset: 27, TSLast: 28}

// The fixture's batch rows of partition 0 (offsets 30 and 31 are gone, as
// compaction leaves them):
//
//	row last  9: object 1, batches 0-4 [0,+100) and 5-9 [100,+100)
//	row last 19: object 2, batches 10 [0,+50) and 11-19 [50,+200)
//	row last 29: segment object 3, offsets 20-29, 1000 bytes
//	row last 34: object 4, batch 32-34 [0,+10)
//
// Partition 1 holds one row, last offset 4, of object 9; partition 2 one
// row whose header does not decode; partition 3 one row whose key says
// last offset 6 for batches ending at 4.
var (
	b0_4   = bc(0, 4, 0, 100)
	b5_9   = bc(5, 9, 100, 100)
	b10    = bc(10, 10, 0, 50)
	b11_19 = bc(11, 19, 50, 200)
	s20_29 = segRow.Coord(29)
	b32_34 = bc(32, 34, 0, 10)
)

// row is one fixture row's key and value.
type row struct{ k, v []byte }

// runRow encodes a batch run row of object obj.
func runRow(partition int32, obj uint64, batches ...coordapi.BatchCoord) row {
	v := layout.AppendBatchRun(nil, &layout.RunHeader{Object: obj}, batches)
	v = layout.AppendRunProducerCount(v, 0)
	return row{layout.BatchKey(topic, partition, batches[len(batches)-1].LastOffset), v}
}

// fixtureRows are the fixture's rows in key order.
func fixtureRows() []row {
	return []row{
		runRow(0, 1, b0_4, b5_9),
		runRow(0, 2, b10, b11_19),
		{layout.BatchKey(topic, 0, 29), layout.AppendSegmentRow(nil, &segRow)},
		runRow(0, 4, b32_34),
		runRow(1, 9, bc(0, 4, 0, 7)),
		{layout.BatchKey(topic, 2, 5), []byte{layout.ValueRun, 0xff}},
		{layout.BatchKey(topic, 3, 6), runRow(3, 5, bc(0, 4, 0, 7)).v},
	}
}

// openFixture returns an in-memory Pebble holding the fixture's rows.
func openFixture(t *testing.T) *pebble.DB {
	t.Helper()
	db := testkit.MemPebble(t)
	b := db.NewBatch()
	for _, r := range fixtureRows() {
		if err := b.Set(r.k, r.v, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		t.Fatal(err)
	}
	return db
}

// iter opens an iterator over [lower, upper), closed when t ends.
func iter(t *testing.T, db *pebble.DB, lower, upper []byte) *pebble.Iterator {
	t.Helper()
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = it.Close() })
	return it
}

// partIter opens an iterator over every batch row of partition p.
func partIter(t *testing.T, db *pebble.DB, p int32) *pebble.Iterator {
	lower, upper := layout.BatchPartitionBounds(topic, p)
	return iter(t, db, lower, upper)
}

// dbScan is a Scan over db's rows.
func dbScan(db *pebble.DB) Scan {
	return func(lower, upper []byte, fn func(k, v []byte) error) error {
		it, err := db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
		if err != nil {
			return err
		}
		defer it.Close()
		for ok := it.First(); ok; ok = it.Next() {
			if err := fn(it.Key(), it.Value()); err != nil {
				return err
			}
		}
		return it.Error()
	}
}

// TestBatches checks which batches, and objects, Batches answers from the
// fixture: the first run skipped up to Offset, MaxBytes and the limit at
// their boundaries, a segment alone, and the errors of rows that do not
// decode.
func TestBatches(t *testing.T) {
	db := openFixture(t)
	const hwm = 35
	for _, tc := range []struct {
		name      string
		partition int32
		offset    int64
		maxBytes  int32
		limit     int64
		want      []coordapi.BatchCoord
		wantNums  []uint64
		wantErr   bool
	}{
		{"from 0, up to the segment", 0, 0, 1 << 20, hwm,
			[]coordapi.BatchCoord{b0_4, b5_9, b10, b11_19}, []uint64{1, 1, 2, 2}, false},
		{"inside a batch", 0, 7, 1 << 20, hwm,
			[]coordapi.BatchCoord{b5_9, b10, b11_19}, []uint64{1, 2, 2}, false},
		{"at a batch's last offset", 0, 4, 1 << 20, hwm,
			[]coordapi.BatchCoord{b0_4, b5_9, b10, b11_19}, []uint64{1, 1, 2, 2}, false},
		{"after a batch's last offset", 0, 5, 1 << 20, hwm,
			[]coordapi.BatchCoord{b5_9, b10, b11_19}, []uint64{1, 2, 2}, false},
		{"segment alone", 0, 20, 1 << 20, hwm, []coordapi.BatchCoord{s20_29}, []uint64{3}, false},
		{"inside the segment", 0, 29, 1 << 20, hwm, []coordapi.BatchCoord{s20_29}, []uint64{3}, false},
		{"segment at the limit", 0, 20, 1 << 20, 20, nil, nil, false},
		{"segment below the limit", 0, 20, 1 << 20, 21, []coordapi.BatchCoord{s20_29}, []uint64{3}, false},
		{"after the segment, over the hole", 0, 30, 1 << 20, hwm, []coordapi.BatchCoord{b32_34}, []uint64{4}, false},
		{"max bytes filled exactly", 0, 0, 200, hwm, []coordapi.BatchCoord{b0_4, b5_9}, []uint64{1, 1}, false},
		{"max bytes one short", 0, 0, 199, hwm, []coordapi.BatchCoord{b0_4}, []uint64{1}, false},
		{"max bytes 0 still answers one batch", 0, 0, 0, hwm, []coordapi.BatchCoord{b0_4}, []uint64{1}, false},
		{"limit at a batch's base", 0, 0, 1 << 20, 10, []coordapi.BatchCoord{b0_4, b5_9}, []uint64{1, 1}, false},
		{"limit one past a batch's base", 0, 0, 1 << 20, 11, []coordapi.BatchCoord{b0_4, b5_9, b10}, []uint64{1, 1, 2}, false},
		{"limit inside the first batch", 0, 0, 1 << 20, 1, []coordapi.BatchCoord{b0_4}, []uint64{1}, false},
		{"limit 0", 0, 0, 1 << 20, 0, nil, nil, false},
		{"at the high watermark", 0, hwm, 1 << 20, hwm, nil, nil, false},
		{"another partition", 1, 0, 1 << 20, 5, []coordapi.BatchCoord{bc(0, 4, 0, 7)}, []uint64{9}, false},
		{"a row that does not decode", 2, 0, 1 << 20, 6, nil, nil, true},
		{"a row whose batches do not end at its key", 3, 0, 1 << 20, 7, nil, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			it := iter(t, db, layout.BatchKey(topic, tc.partition, tc.offset), layout.BatchKey(topic, tc.partition, hwm))
			req := coordapi.FindBatchesRequest{TopicID: topic, Partition: tc.partition, Offset: tc.offset, MaxBytes: tc.maxBytes}
			got, nums, err := Batches(it, req, tc.limit)
			if (err != nil) != tc.wantErr {
				t.Fatalf("Batches: error %v, want error %v", err, tc.wantErr)
			}
			if err != nil && errors.Is(err, ErrStop) {
				t.Fatalf("Batches: error %v is ErrStop", err)
			}
			if !slices.Equal(got, tc.want) || !slices.Equal(nums, tc.wantNums) {
				t.Fatalf("Batches = %+v, %v\nwant      %+v, %v", got, nums, tc.want, tc.wantNums)
			}
		})
	}
}

// TestResolvePosting checks where ResolvePosting finds a posting's batch:
// a WAL batch whole, a segment with the posting's own offsets, nothing in
// a hole compaction left.
func TestResolvePosting(t *testing.T) {
	db := openFixture(t)
	kb := func(c coordapi.BatchCoord) coordapi.KeyBatch {
		return coordapi.KeyBatch{Coord: c, BaseOffset: c.BaseOffset, LastOffset: c.LastOffset}
	}
	for _, tc := range []struct {
		name      string
		partition int32
		at        int64
		po        kvindex.Posting
		want      coordapi.KeyBatch
		wantObj   uint64
		wantOK    bool
		wantErr   bool
	}{
		{"first batch", 0, 0, kvindex.Posting{BaseOffset: 0, LastOffset: 4}, kb(b0_4), 1, true, false},
		{"second batch of a row", 0, 5, kvindex.Posting{BaseOffset: 5, LastOffset: 9}, kb(b5_9), 1, true, false},
		{"log start inside the batch", 0, 7, kvindex.Posting{BaseOffset: 5, LastOffset: 9}, kb(b5_9), 1, true, false},
		{"batch grown by compaction", 0, 12, kvindex.Posting{BaseOffset: 12, LastOffset: 13}, kb(b11_19), 2, true, false},
		{"single-offset batch", 0, 10, kvindex.Posting{BaseOffset: 10, LastOffset: 10}, kb(b10), 2, true, false},
		{"in a segment: the posting's offsets", 0, 22, kvindex.Posting{BaseOffset: 21, LastOffset: 23},
			coordapi.KeyBatch{Coord: s20_29, BaseOffset: 21, LastOffset: 23}, 3, true, false},
		{"at the segment's base", 0, 20, kvindex.Posting{BaseOffset: 20, LastOffset: 20},
			coordapi.KeyBatch{Coord: s20_29, BaseOffset: 20, LastOffset: 20}, 3, true, false},
		{"removed by compaction (a hole)", 0, 30, kvindex.Posting{BaseOffset: 30, LastOffset: 31}, coordapi.KeyBatch{}, 0, false, false},
		{"hole up to the next batch's base", 0, 30, kvindex.Posting{BaseOffset: 30, LastOffset: 32}, kb(b32_34), 4, true, false},
		{"past every row", 0, 35, kvindex.Posting{BaseOffset: 35, LastOffset: 36}, coordapi.KeyBatch{}, 0, false, false},
		{"a row that does not decode", 2, 0, kvindex.Posting{BaseOffset: 0, LastOffset: 5}, coordapi.KeyBatch{}, 0, false, true},
		{"a row whose batches do not end at its key", 3, 5, kvindex.Posting{BaseOffset: 5, LastOffset: 6}, coordapi.KeyBatch{}, 0, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			it := partIter(t, db, tc.partition)
			got, obj, ok, err := ResolvePosting(it, topic, tc.partition, tc.at, tc.po)
			if (err != nil) != tc.wantErr || (err != nil && errors.Is(err, ErrStop)) {
				t.Fatalf("ResolvePosting: error %v, want error %v", err, tc.wantErr)
			}
			if got != tc.want || obj != tc.wantObj || ok != tc.wantOK {
				t.Fatalf("ResolvePosting = %+v, %d, %v\nwant            %+v, %d, %v", got, obj, ok, tc.want, tc.wantObj, tc.wantOK)
			}
		})
	}
}

// TestWithAbortMarkers checks the merge of abort markers into a key's
// batches: in offset order, once, only those in [Offset, Through), none
// that compaction removed.
func TestWithAbortMarkers(t *testing.T) {
	db := openFixture(t)
	kb := func(c coordapi.BatchCoord) coordapi.KeyBatch {
		return coordapi.KeyBatch{Coord: c, BaseOffset: c.BaseOffset, LastOffset: c.LastOffset}
	}
	ab := func(lasts ...int64) []coordapi.AbortedTxn {
		var out []coordapi.AbortedTxn
		for i, l := range lasts {
			out = append(out, coordapi.AbortedTxn{ProducerID: int64(i), FirstOffset: 0, LastOffset: l})
		}
		return out
	}
	for _, tc := range []struct {
		name     string
		offset   int64
		through  int64
		batches  []coordapi.KeyBatch
		nums     []uint64
		aborted  []coordapi.AbortedTxn
		want     []coordapi.KeyBatch
		wantNums []uint64
	}{
		{"none aborted", 0, 20, []coordapi.KeyBatch{kb(b0_4)}, []uint64{1}, nil,
			[]coordapi.KeyBatch{kb(b0_4)}, []uint64{1}},
		{"marker between batches", 0, 20, []coordapi.KeyBatch{kb(b0_4), kb(b11_19)}, []uint64{1, 2}, ab(10),
			[]coordapi.KeyBatch{kb(b0_4), kb(b10), kb(b11_19)}, []uint64{1, 2, 2}},
		{"marker alone", 0, 20, nil, nil, ab(10), []coordapi.KeyBatch{kb(b10)}, []uint64{2}},
		{"marker already answered", 0, 20, []coordapi.KeyBatch{kb(b10)}, []uint64{2}, ab(10),
			[]coordapi.KeyBatch{kb(b10)}, []uint64{2}},
		{"same marker twice", 0, 20, nil, nil, ab(10, 10), []coordapi.KeyBatch{kb(b10)}, []uint64{2}},
		{"markers out of order", 0, 35, []coordapi.KeyBatch{kb(b10)}, []uint64{2}, ab(33, 4),
			[]coordapi.KeyBatch{kb(b0_4), kb(b10), kb(b32_34)}, []uint64{1, 2, 4}},
		{"marker after the batches", 0, 20, []coordapi.KeyBatch{kb(b0_4)}, []uint64{1}, ab(10),
			[]coordapi.KeyBatch{kb(b0_4), kb(b10)}, []uint64{1, 2}},
		{"marker at Through is out", 0, 10, []coordapi.KeyBatch{kb(b0_4)}, []uint64{1}, ab(10),
			[]coordapi.KeyBatch{kb(b0_4)}, []uint64{1}},
		{"marker before Offset is out", 11, 20, []coordapi.KeyBatch{kb(b11_19)}, []uint64{2}, ab(10),
			[]coordapi.KeyBatch{kb(b11_19)}, []uint64{2}},
		{"marker at Offset is in", 10, 20, []coordapi.KeyBatch{kb(b11_19)}, []uint64{2}, ab(10),
			[]coordapi.KeyBatch{kb(b10), kb(b11_19)}, []uint64{2, 2}},
		{"marker removed by compaction", 0, 35, []coordapi.KeyBatch{kb(b11_19)}, []uint64{2}, ab(31),
			[]coordapi.KeyBatch{kb(b11_19)}, []uint64{2}},
		{"marker in a segment", 0, 35, []coordapi.KeyBatch{kb(b0_4)}, []uint64{1}, ab(25),
			[]coordapi.KeyBatch{kb(b0_4), {Coord: s20_29, BaseOffset: 25, LastOffset: 25}}, []uint64{1, 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			it := partIter(t, db, 0)
			req := coordapi.FindKeyBatchesRequest{TopicID: topic, Partition: 0, Offset: tc.offset}
			resp := coordapi.FindKeyBatchesResponse{Batches: tc.batches, Through: tc.through}
			got, nums, err := WithAbortMarkers(it, req, resp, tc.nums, tc.aborted)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) || !slices.Equal(nums, tc.wantNums) {
				t.Fatalf("WithAbortMarkers = %+v, %v\nwant             %+v, %v", got, nums, tc.want, tc.wantNums)
			}
		})
	}
}

// TestWithAbortMarkersError checks that a row that does not decode fails
// the merge.
func TestWithAbortMarkersError(t *testing.T) {
	db := openFixture(t)
	it := partIter(t, db, 2)
	req := coordapi.FindKeyBatchesRequest{TopicID: topic, Partition: 2}
	resp := coordapi.FindKeyBatchesResponse{Through: 6}
	if got, _, err := WithAbortMarkers(it, req, resp, nil, []coordapi.AbortedTxn{{LastOffset: 5}}); err == nil {
		t.Fatalf("WithAbortMarkers = %+v, want an error", got)
	}
}

// TestRowStats checks the sums over ranges of the fixture's rows: dead
// bytes per object, batch and segment counts and bytes, and each row's
// encoded size counted once.
func TestRowStats(t *testing.T) {
	db := openFixture(t)
	rows := fixtureRows()
	size := func(rs ...row) int64 {
		var n int64
		for _, r := range rs {
			n += int64(len(r.k) + len(r.v))
		}
		return n
	}
	p0lo, p0hi := layout.BatchPartitionBounds(topic, 0)
	for _, tc := range []struct {
		name         string
		lower, upper []byte
		want         Stats
		wantErr      bool
	}{
		{"partition 0", p0lo, p0hi, Stats{
			Dead:    map[uint64]int64{1: 200, 2: 250, 3: 1000, 4: 10},
			Batches: 5, Segments: 1, Bytes: 1460, SegBytes: 1000, RowBytes: size(rows[:4]...),
		}, false},
		{"two rows", layout.BatchKey(topic, 0, 10), layout.BatchKey(topic, 0, 30), Stats{
			Dead:    map[uint64]int64{2: 250, 3: 1000},
			Batches: 2, Segments: 1, Bytes: 1250, SegBytes: 1000, RowBytes: size(rows[1:3]...),
		}, false},
		{"one run row", layout.BatchKey(topic, 0, 0), layout.BatchKey(topic, 0, 10), Stats{
			Dead: map[uint64]int64{1: 200}, Batches: 2, Bytes: 200, RowBytes: size(rows[0]),
		}, false},
		{"empty range", layout.BatchKey(topic, 0, 35), p0hi, Stats{Dead: map[uint64]int64{}}, false},
		{"a row that does not decode", layout.BatchKey(topic, 2, 0), layout.BatchKey(topic, 3, 0), Stats{}, true},
		{"a row whose batches do not end at its key", layout.BatchKey(topic, 3, 0), layout.BatchKey(topic, 4, 0), Stats{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := RowStats(dbScan(db), tc.lower, tc.upper)
			if (err != nil) != tc.wantErr {
				t.Fatalf("RowStats: error %v, want error %v", err, tc.wantErr)
			}
			if tc.wantErr {
				return
			}
			if !maps.Equal(got.Dead, tc.want.Dead) {
				t.Errorf("RowStats: Dead %v, want %v", got.Dead, tc.want.Dead)
			}
			if g, w := [5]int64{got.Batches, got.Segments, got.Bytes, got.SegBytes, got.RowBytes},
				[5]int64{tc.want.Batches, tc.want.Segments, tc.want.Bytes, tc.want.SegBytes, tc.want.RowBytes}; g != w {
				t.Errorf("RowStats = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestRows checks that Rows calls fn for every batch in offset order with
// its row's key, value and object, and how it ends: ErrStop (even wrapped)
// without error, any other error as it is.
func TestRows(t *testing.T) {
	db := openFixture(t)
	errFn := errors.New("fn failed")
	errScan := errors.New("scan failed")
	p0lo, p0hi := layout.BatchPartitionBounds(topic, 0)
	all := []string{"1:0-4@9", "1:5-9@9", "2:10-10@19", "2:11-19@19", "3:20-29@29 seg", "4:32-34@34"}
	for _, tc := range []struct {
		name    string
		scan    Scan
		stopAt  int   // fn returns stopErr at this call (0: never)
		stopErr error // ErrStop or errFn
		want    []string
		wantErr error
	}{
		{"every batch in offset order", dbScan(db), 0, nil, all, nil},
		{"ErrStop ends without error", dbScan(db), 3, ErrStop, all[:3], nil},
		{"ErrStop at the first batch", dbScan(db), 1, ErrStop, all[:1], nil},
		{"fn's error is returned as it is", dbScan(db), 2, errFn, all[:2], errFn},
		{"the scan's error is returned", func([]byte, []byte, func(k, v []byte) error) error { return errScan }, 0, nil, nil, errScan},
		{"a scan wrapping ErrStop ends without error", func([]byte, []byte, func(k, v []byte) error) error {
			return fmt.Errorf("wrapped: %w", ErrStop)
		}, 0, nil, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			err := Rows(tc.scan, p0lo, p0hi, func(k, v []byte, object uint64, c coordapi.BatchCoord) error {
				last, err := layout.DecodeBatchKey(k)
				if err != nil {
					t.Fatalf("Rows passed key %x: %v", k, err)
				}
				if layout.IsSegmentRow(v) != c.Segment {
					t.Fatalf("Rows passed a value that is a segment row: %v, for a coordinate with Segment %v", layout.IsSegmentRow(v), c.Segment)
				}
				s := fmt.Sprintf("%d:%d-%d@%d", object, c.BaseOffset, c.LastOffset, last)
				if c.Segment {
					s += " seg"
				}
				got = append(got, s)
				if len(got) == tc.stopAt {
					return tc.stopErr
				}
				return nil
			})
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil) {
				t.Fatalf("Rows: error %v, want %v", err, tc.wantErr)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("Rows called fn with %q, want %q", got, tc.want)
			}
		})
	}
}
