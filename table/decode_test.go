package table_test

import (
	"context"
	"testing"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/objectstore"
	"github.com/floe-io/floe/record"
	"github.com/floe-io/floe/table"
	"github.com/floe-io/floe/table/catalog"
)

// batch builds one batch at base with n records whose values are "v<offset>".
func batch(t *testing.T, base int64, n int, opts record.BuildOptions) []byte {
	t.Helper()
	opts.BaseOffset = base
	if opts.BaseTimestamp == 0 {
		opts.BaseTimestamp = 1_765_000_000_000
	}
	var recs []record.Record
	for i := range n {
		o := base + int64(i)
		recs = append(recs, record.Record{
			TimestampDelta: int64(i),
			Key:            []byte{byte(o)},
			Value:          []byte("v" + string(rune('0'+o%10))),
			Headers:        []record.RecordHeader{{Key: "o", Value: []byte{byte(o)}}},
		})
	}
	b, err := record.Build(opts, recs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestDecode turns batches into rows with the read_committed rule:
// markers and aborted transactions give none, LogAppendTime batches their
// append time, compressed batches decode.
func TestDecode(t *testing.T) {
	const txn = record.AttrTransactional
	marker := record.BuildOptions{Attributes: record.AttrControl | txn}
	for _, tc := range []struct {
		name        string
		batches     [][]byte
		aborted     []coordapi.AbortedTxn
		offsets     []int64
		dropped     int
		appendTime  int64 // every row's timestamp, when set
		wantErr     bool
		checkValues bool
	}{
		{name: "plain", checkValues: true,
			batches: [][]byte{batch(t, 0, 3, record.BuildOptions{}), batch(t, 3, 2, record.BuildOptions{Codec: record.CodecZstd})},
			offsets: []int64{0, 1, 2, 3, 4}},
		{name: "aborted transaction between committed ones",
			batches: [][]byte{
				batch(t, 0, 2, record.BuildOptions{ProducerID: 7, Attributes: txn}),
				batch(t, 2, 2, record.BuildOptions{ProducerID: 8, Attributes: txn}),
				batch(t, 4, 1, withPID(marker, 7)), // commit of 7
				batch(t, 5, 1, withPID(marker, 8)), // abort of 8
				batch(t, 6, 2, record.BuildOptions{ProducerID: 8, Attributes: txn}),
				batch(t, 8, 1, withPID(marker, 8)), // commit of 8
			},
			aborted: []coordapi.AbortedTxn{{ProducerID: 8, FirstOffset: 2, LastOffset: 5}},
			offsets: []int64{0, 1, 6, 7}, dropped: 2},
		{name: "an aborted transaction of another producer drops nothing",
			batches: [][]byte{batch(t, 10, 2, record.BuildOptions{ProducerID: 7, Attributes: txn})},
			aborted: []coordapi.AbortedTxn{{ProducerID: 8, FirstOffset: 0, LastOffset: 20}},
			offsets: []int64{10, 11}},
		{name: "non-transactional batch of an aborting producer is kept",
			batches: [][]byte{batch(t, 10, 2, record.BuildOptions{ProducerID: 8})},
			aborted: []coordapi.AbortedTxn{{ProducerID: 8, FirstOffset: 0, LastOffset: 20}},
			offsets: []int64{10, 11}},
		// Build sets MaxTimestamp to the largest record timestamp, base + 2: as
		// the append time, it is every row's.
		{name: "log append time", appendTime: 1_765_000_999_002,
			batches: [][]byte{batch(t, 0, 3, record.BuildOptions{Attributes: record.AttrLogAppendTime, BaseTimestamp: 1_765_000_999_000})},
			offsets: []int64{0, 1, 2}},
		{name: "corrupt", wantErr: true, batches: [][]byte{{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b []byte
			for _, x := range tc.batches {
				b = append(b, x...)
			}
			recs, dropped, err := table.Decode(nil, 3, b, tc.aborted)
			if tc.wantErr {
				if err == nil {
					t.Fatal("no error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if dropped != tc.dropped {
				t.Errorf("dropped %d, want %d", dropped, tc.dropped)
			}
			var offs []int64
			for _, r := range recs {
				offs = append(offs, r.Offset)
				if r.Partition != 3 || len(r.Key) != 1 || r.Key[0] != byte(r.Offset) ||
					len(r.Headers) != 1 || r.Headers[0].Key != "o" || r.Headers[0].Value[0] != byte(r.Offset) {
					t.Errorf("row %+v", r)
				}
				if tc.appendTime != 0 && r.Timestamp != tc.appendTime {
					t.Errorf("offset %d timestamp %d, want the append time %d", r.Offset, r.Timestamp, tc.appendTime)
				}
				if tc.checkValues && string(r.Value) != "v"+string(rune('0'+r.Offset%10)) {
					t.Errorf("offset %d value %q", r.Offset, r.Value)
				}
			}
			if len(offs) != len(tc.offsets) {
				t.Fatalf("offsets %v, want %v", offs, tc.offsets)
			}
			for i := range offs {
				if offs[i] != tc.offsets[i] {
					t.Fatalf("offsets %v, want %v", offs, tc.offsets)
				}
			}
		})
	}
}

func withPID(o record.BuildOptions, pid int64) record.BuildOptions {
	o.ProducerID = pid
	return o
}

// TestDecodeCommit: a range with an aborted transaction, decoded and
// committed, reads back without the aborted records, and the range
// (markers included) is covered.
func TestDecodeCommit(t *testing.T) {
	ctx := context.Background()
	const txn = record.AttrTransactional
	marker := record.BuildOptions{Attributes: record.AttrControl | txn}
	var b []byte
	for _, x := range [][]byte{
		batch(t, 0, 2, record.BuildOptions{}),
		batch(t, 2, 3, record.BuildOptions{ProducerID: 8, Attributes: txn}),
		batch(t, 5, 1, withPID(marker, 8)), // abort
		batch(t, 6, 2, record.BuildOptions{Codec: record.CodecLZ4}),
	} {
		b = append(b, x...)
	}
	recs, dropped, err := table.Decode(nil, 0, b, []coordapi.AbortedTxn{{ProducerID: 8, FirstOffset: 2, LastOffset: 5}})
	if err != nil || dropped != 3 {
		t.Fatalf("decode: %d dropped, %v", dropped, err)
	}
	tb := newTables(t, objectstore.NewMemory(), "mem://floe", &catalog.MemCatalog{})
	if _, err := tb.Create(ctx, topic, table.Spec{}); err != nil {
		t.Fatal(err)
	}
	if _, err := tb.Commit(ctx, topic, table.Range{Partition: 0, From: 0, To: 8, Records: recs}); err != nil {
		t.Fatal(err)
	}
	got := readAll(t, tb)
	equalRecords(t, got, recs)
	if len(got) != 4 || got[2].Offset != 6 {
		t.Fatalf("rows %+v", got)
	}
	if cov, err := tb.Covered(ctx, topic); err != nil || cov[0] != 8 {
		t.Fatalf("covered %v, %v", cov, err)
	}
}
