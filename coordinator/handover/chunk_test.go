package handover

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/coordinator/layout"
	"github.com/floe-io/floe/internal/keyspan"
	"github.com/floe-io/floe/internal/testkit"
)

var (
	topicA = coordapi.TopicID{0xa}
	topicB = coordapi.TopicID{0xb}
)

// runValue returns a batch run value in object num of batches of the
// given byte lengths, one offset each, ending at offset last.
func runValue(t *testing.T, num uint64, last int64, lengths ...int32) []byte {
	t.Helper()
	var batches []coordapi.BatchCoord
	base := last - int64(len(lengths)) + 1
	var off int64
	for i, l := range lengths {
		o := base + int64(i)
		batches = append(batches, coordapi.BatchCoord{ByteOffset: off, ByteLength: l, BaseOffset: o, LastOffset: o})
		off += int64(l)
	}
	v := layout.AppendBatchRun(nil, &layout.RunHeader{Object: num}, batches)
	return layout.AppendRunProducerCount(v, 0)
}

// segValue returns a segment row value in object num of dataLen bytes,
// offsets base to last.
func segValue(num uint64, base, last, dataLen int64) []byte {
	return layout.AppendSegmentRow(nil, &layout.SegmentRow{Object: num, Base: base, Batches: last - base + 1,
		DataLength: dataLen, MaxTimestamp: -1, TSOffset: -1, TSLast: -1})
}

// familyKey returns a key of the family prefix for (id, partition),
// followed by suffix: a row of PartitionRowsBounds' range of that family.
func familyKey(prefix byte, id coordapi.TopicID, partition int32, suffix string) []byte {
	for _, r := range layout.PartitionRowsBounds(id, partition) {
		if r[0][0] == prefix {
			return append(bytes.Clone(r[0]), suffix...)
		}
	}
	panic(fmt.Sprintf("no family %c", prefix))
}

// partitionRows are the rows of topicA/1 in key order (batch rows first,
// then postings, key index and held keys), with the objects their batch
// rows name.
func partitionRows(t *testing.T) []coordapi.ChunkRow {
	t.Helper()
	return []coordapi.ChunkRow{
		{Key: layout.BatchKey(topicA, 1, 2), Value: runValue(t, 7, 2, 10, 20, 30)},
		{Key: layout.BatchKey(topicA, 1, 5), Value: runValue(t, 9, 5, 40)},
		{Key: layout.BatchKey(topicA, 1, 9), Value: segValue(11, 6, 9, 1000)},
		{Key: familyKey(layout.PrefixPostings, topicA, 1, "p1"), Value: []byte("postings-1")},
		{Key: familyKey(layout.PrefixPostings, topicA, 1, "p2"), Value: []byte("postings-2")},
		{Key: familyKey(layout.PrefixKV, topicA, 1, "key"), Value: []byte("kv")},
		{Key: familyKey(layout.PrefixTxnKeys, topicA, 1, "held"), Value: []byte("held-keys")},
	}
}

// rowObjects are the objects partitionRows' batch rows name, by row index.
var rowObjects = map[int]uint64{0: 7, 1: 9, 2: 11}

// exportDB returns a Pebble holding partitionRows and rows of other
// partitions and families around them, with its Scan.
func exportDB(t *testing.T) Scan {
	t.Helper()
	db := testkit.MemPebble(t)
	b := db.NewBatch()
	others := []coordapi.ChunkRow{
		{Key: layout.BatchKey(topicA, 0, 3), Value: runValue(t, 1, 3, 5)},
		{Key: layout.BatchKey(topicA, 2, 3), Value: runValue(t, 2, 3, 5)},
		{Key: layout.BatchKey(topicB, 1, 3), Value: runValue(t, 3, 3, 5)},
		{Key: layout.PartitionKey(topicA, 1), Value: []byte("checkpoint")},
		{Key: layout.ProducerKey(42, topicA, 1), Value: []byte("producer")},
		{Key: familyKey(layout.PrefixPostings, topicA, 2, "p"), Value: []byte("other")},
		{Key: familyKey(layout.PrefixAborted, topicA, 0, "q"), Value: []byte("other")},
	}
	for _, r := range append(partitionRows(t), others...) {
		if err := b.Set(r.Key, r.Value, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Commit(pebble.Sync); err != nil {
		t.Fatal(err)
	}
	return func(lower, upper []byte, fn func(k, v []byte) error) error {
		return keyspan.Scan(db, lower, upper, fn)
	}
}

func rowSize(r coordapi.ChunkRow) int { return len(r.Key) + len(r.Value) }

// objectsOf returns the objects rows[from:to] name.
func objectsOf(from, to int) map[uint64]bool {
	out := map[uint64]bool{}
	for i, num := range rowObjects {
		if i >= from && i < to {
			out[num] = true
		}
	}
	return out
}

// TestExportRows checks one chunk of ExportRows: which of the
// partition's rows (and only its) a chunk holds from a cursor, in key
// order; that it stops once maxBytes are reached, with at least one row;
// whether it reports the chunk full; and the objects its batch rows name.
func TestExportRows(t *testing.T) {
	all := partitionRows(t)
	total := 0
	for _, r := range all {
		total += rowSize(r)
	}
	s0, s1 := rowSize(all[0]), rowSize(all[1])
	for _, tc := range []struct {
		name     string
		cursor   []byte
		maxBytes int
		from, to int // the chunk is all[from:to]
		full     bool
	}{
		{name: "all rows", maxBytes: 1 << 20, from: 0, to: len(all)},
		{name: "exactly the partition's bytes", maxBytes: total, from: 0, to: len(all)},
		{name: "a row larger than maxBytes", maxBytes: 1, from: 0, to: 1, full: true},
		{name: "stops once maxBytes reached", maxBytes: s0, from: 0, to: 1, full: true},
		{name: "one byte under two rows", maxBytes: s0 + s1 - 1, from: 0, to: 2, full: true},
		{name: "exactly two rows", maxBytes: s0 + s1, from: 0, to: 2, full: true},
		{name: "one byte over two rows", maxBytes: s0 + s1 + 1, from: 0, to: 3, full: true},
		{name: "one byte short of all", maxBytes: total - 1, from: 0, to: len(all)},
		{name: "cursor within the batch range", cursor: all[0].Key, maxBytes: 1 << 20, from: 1, to: len(all)},
		{name: "cursor at the last batch row", cursor: all[2].Key, maxBytes: 1 << 20, from: 3, to: len(all)},
		{name: "cursor at the last batch row, one row", cursor: all[2].Key, maxBytes: 1, from: 3, to: 4, full: true},
		{name: "cursor within postings", cursor: all[3].Key, maxBytes: 1 << 20, from: 4, to: len(all)},
		{name: "cursor between rows", cursor: append(bytes.Clone(all[3].Key[:len(all[3].Key)-1]), '0'),
			maxBytes: 1 << 20, from: 3, to: len(all)},
		{name: "cursor at the last row", cursor: all[len(all)-1].Key, maxBytes: 1 << 20, from: len(all), to: len(all)},
		{name: "cursor beyond the partition", cursor: []byte{0xff}, maxBytes: 1 << 20, from: len(all), to: len(all)},
		{name: "cursor before the partition", cursor: []byte{'a'}, maxBytes: 1 << 20, from: 0, to: len(all)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			scan := exportDB(t)
			rows, objects, full, err := ExportRows(layout.PartitionRowsBounds(topicA, 1), tc.cursor, tc.maxBytes, scan)
			if err != nil {
				t.Fatal(err)
			}
			want := all[tc.from:tc.to]
			if len(rows) != len(want) {
				t.Fatalf("%d rows, want %d (%d to %d)", len(rows), len(want), tc.from, tc.to)
			}
			for i := range want {
				if !bytes.Equal(rows[i].Key, want[i].Key) || !bytes.Equal(rows[i].Value, want[i].Value) {
					t.Fatalf("row %d is %x, want %x", i, rows[i].Key, want[i].Key)
				}
			}
			if full != tc.full {
				t.Errorf("full %v, want %v", full, tc.full)
			}
			if w := objectsOf(tc.from, tc.to); !maps.Equal(objects, w) {
				t.Errorf("objects %v, want %v", objects, w)
			}
		})
	}
}

// TestExportRowsChunks checks that chunks taken one after the other, each
// from the last key of the one before, hold every row of the partition
// once, in key order, whatever the chunk size: only the last is not full,
// every full one holds at least a row, and each chunk's objects are those
// of its own batch rows.
func TestExportRowsChunks(t *testing.T) {
	all := partitionRows(t)
	for _, maxBytes := range []int{1, 40, 60, 100, 200, 1 << 20} {
		t.Run(fmt.Sprint(maxBytes), func(t *testing.T) {
			scan := exportDB(t)
			var (
				got    []coordapi.ChunkRow
				cursor []byte
			)
			for n := 0; ; n++ {
				if n > len(all)+1 {
					t.Fatalf("%d chunks and not done", n)
				}
				start := len(got)
				rows, objects, full, err := ExportRows(layout.PartitionRowsBounds(topicA, 1), cursor, maxBytes, scan)
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, rows...)
				if w := objectsOf(start, len(got)); !maps.Equal(objects, w) {
					t.Errorf("chunk %d: objects %v, want %v", n, objects, w)
				}
				if !full {
					break
				}
				if len(rows) == 0 {
					t.Fatalf("chunk %d full with no rows", n)
				}
				cursor = rows[len(rows)-1].Key
			}
			if len(got) != len(all) {
				t.Fatalf("%d rows in all, want %d", len(got), len(all))
			}
			for i := range all {
				if !bytes.Equal(got[i].Key, all[i].Key) || !bytes.Equal(got[i].Value, all[i].Value) {
					t.Fatalf("row %d is %x, want %x", i, got[i].Key, all[i].Key)
				}
			}
		})
	}
}

// TestExportRowsZeroBytes checks that a chunk of no bytes at all still
// holds a row, as ExportRows' doc says ("at least one row"): a full chunk
// with no rows has no last key to be its cursor.
func TestExportRowsZeroBytes(t *testing.T) {
	rows, _, full, err := ExportRows(layout.PartitionRowsBounds(topicA, 1), nil, 0, exportDB(t))
	if err != nil {
		t.Fatal(err)
	}
	if full && len(rows) == 0 {
		t.Fatalf("a full chunk with no rows")
	}
	if len(rows) != 1 {
		t.Errorf("%d rows, want 1", len(rows))
	}
}

// TestExportRowsCopies checks that ExportRows keeps copies of the rows,
// not the scan's buffers, which are only valid during its call.
func TestExportRowsCopies(t *testing.T) {
	all := partitionRows(t)
	scan := func(lower, upper []byte, fn func(k, v []byte) error) error {
		for _, r := range all {
			if bytes.Compare(r.Key, lower) < 0 || bytes.Compare(r.Key, upper) >= 0 {
				continue
			}
			k, v := bytes.Clone(r.Key), bytes.Clone(r.Value)
			err := fn(k, v)
			clear(k)
			clear(v)
			if err != nil {
				return err
			}
		}
		return nil
	}
	rows, _, _, err := ExportRows(layout.PartitionRowsBounds(topicA, 1), nil, 1<<20, scan)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(all) {
		t.Fatalf("%d rows, want %d", len(rows), len(all))
	}
	for i := range all {
		if !bytes.Equal(rows[i].Key, all[i].Key) || !bytes.Equal(rows[i].Value, all[i].Value) {
			t.Fatalf("row %d is %x=%x, want %x=%x", i, rows[i].Key, rows[i].Value, all[i].Key, all[i].Value)
		}
	}
}

// TestExportRowsErrors checks that a scan's error comes back as it is,
// and that a batch row whose value names no object is refused.
func TestExportRowsErrors(t *testing.T) {
	boom := errors.New("boom")
	_, _, full, err := ExportRows(layout.PartitionRowsBounds(topicA, 1), nil, 1<<20,
		func(lower, upper []byte, fn func(k, v []byte) error) error { return boom })
	if !errors.Is(err, boom) || full {
		t.Errorf("scan error: full %v, err %v, want %v", full, err, boom)
	}

	bad := layout.BatchKey(topicA, 1, 3)
	_, _, _, err = ExportRows(layout.PartitionRowsBounds(topicA, 1), nil, 1<<20,
		func(lower, upper []byte, fn func(k, v []byte) error) error {
			if lower[0] != layout.PrefixBatch {
				return nil
			}
			return fn(bad, []byte("not a run"))
		})
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%x", bad)) {
		t.Errorf("bad batch row: err %v, want one naming %x", err, bad)
	}
}

// TestRowBytes checks the bytes a run or segment row counts in its
// object and the object it names, and the refusal of rows that are not
// batch rows.
func TestRowBytes(t *testing.T) {
	for _, tc := range []struct {
		name   string
		k, v   []byte
		n      int64
		object uint64
		err    bool
	}{
		{name: "run of one", k: layout.BatchKey(topicA, 1, 4), v: runValue(t, 5, 4, 17), n: 17, object: 5},
		{name: "run of three", k: layout.BatchKey(topicA, 1, 9), v: runValue(t, 300, 9, 10, 20, 30), n: 60, object: 300},
		{name: "segment", k: layout.BatchKey(topicA, 1, 9), v: segValue(12, 2, 9, 4096), n: 4096, object: 12},
		{name: "not a batch key", k: familyKey(layout.PrefixKV, topicA, 1, "xxxxxxxxxxxxxxxxx"), v: runValue(t, 5, 4, 17), err: true},
		{name: "run ending elsewhere than its key", k: layout.BatchKey(topicA, 1, 5), v: runValue(t, 5, 4, 17), err: true},
		{name: "not a run", k: layout.BatchKey(topicA, 1, 4), v: []byte{0x77, 0, 1}, err: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, object, err := RowBytes(tc.k, tc.v)
			if tc.err {
				if err == nil {
					t.Fatalf("no error; n %d, object %d", n, object)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if n != tc.n || object != tc.object {
				t.Errorf("n %d, object %d; want %d, %d", n, object, tc.n, tc.object)
			}
		})
	}
}

// planChunk is a chunk of topicA/1: batch rows naming objects 7, 9 (two
// rows), 11 and 9 again, then two postings rows (the first at its
// range's lower bound), and its objects.
func planChunk(t *testing.T) *coordapi.PartitionChunk {
	t.Helper()
	return &coordapi.PartitionChunk{
		TopicID: topicA, Partition: 1,
		Rows: []coordapi.ChunkRow{
			{Key: layout.BatchKey(topicA, 1, 2), Value: runValue(t, 7, 2, 10, 20)},    // 30 in "a"
			{Key: layout.BatchKey(topicA, 1, 3), Value: runValue(t, 9, 3, 5)},         // 5 in "b"
			{Key: layout.BatchKey(topicA, 1, 4), Value: runValue(t, 9, 4, 6)},         // 6 in "b"
			{Key: layout.BatchKey(topicA, 1, 8), Value: segValue(11, 5, 8, 1000)},     // 1000 in "c"
			{Key: layout.BatchKey(topicA, 1, 1<<40), Value: runValue(t, 9, 1<<40, 7)}, // 7 in "b"
			{Key: familyKey(layout.PrefixPostings, topicA, 1, ""), Value: []byte("at the range's lower bound")},
			{Key: familyKey(layout.PrefixPostings, topicA, 1, "p"), Value: []byte("postings")},
		},
		Objects: []coordapi.ChunkObject{
			{Num: 7, Key: "a", Size: 100},
			{Num: 9, Key: "b", Size: 200},
			{Num: 11, Key: "c", Size: 300},
		},
	}
}

// TestPlanRows checks how PlanRows renumbers a chunk's batch rows: an
// object this shard knows keeps its number here, one it does not gets
// the next numbers, once per key; the bytes each object gains (less what
// the rows a chunk sent again replaces), the rows as written (only the
// object number changed), their size, and the keys of a last chunk that
// is not the first.
func TestPlanRows(t *testing.T) {
	localObjects := map[string]uint64{"a": 3}
	for _, tc := range []struct {
		name        string
		first, done bool
		live        map[uint64]int64
		old         map[string][2]int64 // key -> bytes, object of the row it replaces
		wantLive    map[uint64]int64
		wantWritten bool
	}{
		{name: "first chunk", first: true,
			wantLive: map[uint64]int64{3: 30, 500: 18, 501: 1000}},
		{name: "first and last chunk", first: true, done: true,
			wantLive: map[uint64]int64{3: 30, 500: 18, 501: 1000}},
		{name: "live given", first: true, live: map[uint64]int64{3: 1, 77: 5},
			wantLive: map[uint64]int64{3: 31, 77: 5, 500: 18, 501: 1000}},
		{name: "later chunk, nothing replaced",
			wantLive: map[uint64]int64{3: 30, 500: 18, 501: 1000}},
		{name: "later chunk sent again",
			old: map[string][2]int64{
				string(layout.BatchKey(topicA, 1, 2)): {30, 3},
				string(layout.BatchKey(topicA, 1, 3)): {5, 44},
			},
			wantLive: map[uint64]int64{3: 0, 44: -5, 500: 18, 501: 1000}},
		{name: "last chunk, not the first", done: true,
			old: map[string][2]int64{
				string(layout.BatchKey(topicA, 1, 8)): {1000, 501},
			},
			wantLive: map[uint64]int64{3: 30, 500: 18, 501: 0}, wantWritten: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ch := planChunk(t)
			ch.First, ch.Done = tc.first, tc.done
			var asked []string
			old := func(k []byte) (int64, uint64, bool, error) {
				asked = append(asked, string(k))
				o, ok := tc.old[string(k)]
				return o[0], uint64(o[1]), ok, nil
			}
			local := func(key string) (uint64, bool) { n, ok := localObjects[key]; return n, ok }
			out, err := PlanRows(ch, layout.PartitionRowsBounds(topicA, 1), 500, tc.live, local, old)
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(out.Live, tc.wantLive) {
				t.Errorf("live %v, want %v", out.Live, tc.wantLive)
			}
			if tc.live != nil && !maps.Equal(tc.live, tc.wantLive) {
				t.Errorf("the live map given is %v, want it updated to %v", tc.live, tc.wantLive)
			}
			if out.Next != 502 {
				t.Errorf("next %d, want 502", out.Next)
			}
			wantCreated := map[uint64]string{500: "b", 501: "c"}
			if len(out.Created) != len(wantCreated) {
				t.Errorf("created %v, want %v", out.Created, wantCreated)
			}
			for num, key := range wantCreated {
				if co := out.Created[num]; co == nil || co.Key != key || co != &ch.Objects[slices.IndexFunc(ch.Objects, func(o coordapi.ChunkObject) bool { return o.Key == key })] {
					t.Errorf("created %d is %+v, want the chunk's object %q", num, co, key)
				}
			}
			// The rows as written: batch rows name this shard's objects,
			// everything else as it came.
			wantNums := []uint64{3, 500, 500, 501, 500}
			if len(out.Rows) != len(ch.Rows) {
				t.Fatalf("%d rows, want %d", len(out.Rows), len(ch.Rows))
			}
			var meta int64
			for i, r := range out.Rows {
				in := ch.Rows[i]
				if !bytes.Equal(r.Key, in.Key) {
					t.Fatalf("row %d key %x, want %x", i, r.Key, in.Key)
				}
				if i >= len(wantNums) {
					if !bytes.Equal(r.Value, in.Value) {
						t.Errorf("row %d (not a batch row) changed: %x, want %x", i, r.Value, in.Value)
					}
					continue
				}
				num, _, err := layout.RowObject(r.Value)
				if err != nil || num != wantNums[i] {
					t.Errorf("row %d names object %d (%v), want %d", i, num, err, wantNums[i])
				}
				want, _ := layout.WithRowObject(in.Value, wantNums[i])
				if !bytes.Equal(r.Value, want) {
					t.Errorf("row %d value %x, want %x", i, r.Value, want)
				}
				meta += int64(len(r.Key) + len(r.Value))
			}
			if out.Meta != meta {
				t.Errorf("meta %d, want %d", out.Meta, meta)
			}
			if tc.first && len(asked) > 0 {
				t.Errorf("old asked of a first chunk: %x", asked)
			}
			if !tc.first && len(asked) != len(wantNums) {
				t.Errorf("old asked of %d rows, want the %d batch rows", len(asked), len(wantNums))
			}
			wantWritten := map[string]bool{}
			if tc.wantWritten {
				for _, r := range ch.Rows[:len(wantNums)] {
					wantWritten[string(r.Key)] = true
				}
			}
			if !maps.Equal(out.Written, wantWritten) {
				t.Errorf("written %d keys, want %d", len(out.Written), len(wantWritten))
			}
		})
	}
}

// TestPlanRowsRefusals checks the chunks PlanRows refuses: a row outside
// the partition's bounds, a batch row naming an object the chunk does
// not, a batch row that does not decode, and an error reading the row a
// row replaces.
func TestPlanRowsRefusals(t *testing.T) {
	boom := errors.New("boom")
	for _, tc := range []struct {
		name   string
		change func(ch *coordapi.PartitionChunk)
		oldErr error
		want   string
	}{
		{name: "row of another partition", want: "is not the partition's", change: func(ch *coordapi.PartitionChunk) {
			ch.Rows = append(ch.Rows, coordapi.ChunkRow{Key: layout.BatchKey(topicA, 2, 1), Value: runValue(t, 7, 1, 1)})
		}},
		{name: "row of another topic", want: "is not the partition's", change: func(ch *coordapi.PartitionChunk) {
			ch.Rows = append([]coordapi.ChunkRow{{Key: familyKey(layout.PrefixKV, topicB, 1, "k"), Value: []byte("v")}}, ch.Rows...)
		}},
		{name: "row at a range's upper bound", want: "is not the partition's", change: func(ch *coordapi.PartitionChunk) {
			ch.Rows = append(ch.Rows, coordapi.ChunkRow{Key: familyKey(layout.PrefixPostings, topicA, 2, ""), Value: []byte("v")})
		}},
		{name: "checkpoint row", want: "is not the partition's", change: func(ch *coordapi.PartitionChunk) {
			ch.Rows = append(ch.Rows, coordapi.ChunkRow{Key: layout.PartitionKey(topicA, 1), Value: []byte("p")})
		}},
		{name: "object not in the chunk", want: "names object 13", change: func(ch *coordapi.PartitionChunk) {
			ch.Rows[1].Value = runValue(t, 13, 3, 5)
		}},
		{name: "no objects", want: "names object 7", change: func(ch *coordapi.PartitionChunk) {
			ch.Objects = nil
		}},
		{name: "bad batch row", want: "batch row", change: func(ch *coordapi.PartitionChunk) {
			ch.Rows[0].Value = []byte{0x77, 1, 2, 3}
		}},
		{name: "old fails", oldErr: boom, change: func(ch *coordapi.PartitionChunk) { ch.First = false }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ch := planChunk(t)
			ch.First = true
			tc.change(ch)
			old := func([]byte) (int64, uint64, bool, error) { return 0, 0, false, tc.oldErr }
			out, err := PlanRows(ch, layout.PartitionRowsBounds(topicA, 1), 500, nil,
				func(string) (uint64, bool) { return 0, false }, old)
			switch {
			case err == nil:
				t.Fatalf("planned %d rows, want an error", len(out.Rows))
			case tc.oldErr != nil && !errors.Is(err, tc.oldErr):
				t.Errorf("err %v, want %v", err, tc.oldErr)
			case !strings.Contains(err.Error(), tc.want):
				t.Errorf("err %v, want %q", err, tc.want)
			}
		})
	}
}

// TestProducers checks that a last chunk's producer rows decode in
// order, and that a row of another partition or topic is refused.
func TestProducers(t *testing.T) {
	p1 := layout.Producer{Epoch: 3, LastUpdateMs: 1000}
	p2 := layout.Producer{Epoch: 5, LastUpdateMs: 2000, N: 1}
	p2.Batches[0] = layout.SeqBatch{BaseSeq: 1, LastSeq: 4, BaseOffset: 10}
	row := func(pid int64, id coordapi.TopicID, part int32, p *layout.Producer) coordapi.ChunkRow {
		return coordapi.ChunkRow{Key: layout.ProducerKey(pid, id, part), Value: layout.EncodeProducer(p)}
	}
	for _, tc := range []struct {
		name string
		rows []coordapi.ChunkRow
		want []Producer
		err  bool
	}{
		{name: "none", want: []Producer{}},
		{name: "two", rows: []coordapi.ChunkRow{row(9, topicA, 1, &p1), row(4, topicA, 1, &p2)},
			want: []Producer{{ID: 9, State: p1}, {ID: 4, State: p2}}},
		{name: "another partition", rows: []coordapi.ChunkRow{row(9, topicA, 1, &p1), row(4, topicA, 2, &p2)}, err: true},
		{name: "another topic", rows: []coordapi.ChunkRow{row(9, topicB, 1, &p1)}, err: true},
		{name: "bad key", rows: []coordapi.ChunkRow{{Key: []byte("r"), Value: layout.EncodeProducer(&p1)}}, err: true},
		{name: "bad value", rows: []coordapi.ChunkRow{{Key: layout.ProducerKey(9, topicA, 1), Value: []byte{0xff}}}, err: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Producers(&coordapi.PartitionChunk{TopicID: topicA, Partition: 1, Done: true, Producers: tc.rows})
			if tc.err {
				if err == nil {
					t.Fatalf("no error: %+v", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}
