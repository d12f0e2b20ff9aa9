package fetchread

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/floe-io/floe/coordapi"
	"github.com/floe-io/floe/record"
)

// txnBatch is one batch of filterAborted's input: n records from base,
// from producer pid; txn and control set the attribute bits.
type txnBatch struct {
	base         int64
	n            int
	pid          int64
	txn, control bool
}

// batchBytes encodes bs back to back, as the broker reads them.
func batchBytes(t *testing.T, bs []txnBatch) []byte {
	t.Helper()
	var out []byte
	for _, b := range bs {
		opts := record.BuildOptions{BaseOffset: b.base, ProducerID: b.pid, BaseSequence: -1}
		if b.txn {
			opts.Attributes |= record.AttrTransactional
		}
		if b.control {
			opts.Attributes |= record.AttrControl
		}
		recs := make([]record.Record, b.n)
		for i := range recs {
			recs[i].Value = []byte("v")
		}
		raw, err := record.Build(opts, recs)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, raw...)
	}
	return out
}

// acquiredString prints runs as first-last(count) ...
func acquiredString(as []coordapi.ShareAcquiredRecords) string {
	var parts []string
	for _, a := range as {
		parts = append(parts, fmt.Sprintf("%d-%d(%d)", a.First, a.Last, a.DeliveryCount))
	}
	return strings.Join(parts, " ")
}

// archiveString prints acknowledgement batches as first-last ...
func archiveString(t *testing.T, as []coordapi.ShareAckBatch) string {
	var parts []string
	for _, a := range as {
		if !slices.Equal(a.Types, []int8{coordapi.ShareAckArchiveAborted}) {
			t.Errorf("archive batch %d-%d has types %v", a.First, a.Last, a.Types)
		}
		parts = append(parts, fmt.Sprintf("%d-%d", a.First, a.Last))
	}
	return strings.Join(parts, " ")
}

// TestFilterAborted checks read_committed's filter of aborted
// transactions' records out of a ShareFetch answer, as Kafka's
// SharePartition.filterAbortedTransactionalAcquiredRecords: aborted
// batches leave the acquired records and are archived; committed,
// non-transactional and control batches (markers, which the client acks
// as gaps) stay.
func TestFilterAborted(t *testing.T) {
	acq := func(first, last int64, count int16) coordapi.ShareAcquiredRecords {
		return coordapi.ShareAcquiredRecords{First: first, Last: last, DeliveryCount: count}
	}
	for _, tc := range []struct {
		name        string
		batches     []txnBatch
		aborted     []coordapi.AbortedTxn
		acquired    []coordapi.ShareAcquiredRecords
		wantKept    string
		wantArchive string
	}{
		{
			// Producer 7 aborts 0-4 (marker 9) while producer 8 commits
			// 5-7 (marker 8) in between.
			name: "aborted batch among another producer's committed ones",
			batches: []txnBatch{
				{base: 0, n: 5, pid: 7, txn: true},
				{base: 5, n: 3, pid: 8, txn: true},
				{base: 8, n: 1, pid: 8, txn: true, control: true},
				{base: 9, n: 1, pid: 7, txn: true, control: true},
				{base: 10, n: 2, pid: 9},
			},
			aborted:     []coordapi.AbortedTxn{{ProducerID: 7, FirstOffset: 0, LastOffset: 9}},
			acquired:    []coordapi.ShareAcquiredRecords{acq(0, 11, 1)},
			wantKept:    "5-11(1)",
			wantArchive: "0-4",
		},
		{
			name: "control batches stay acquired",
			batches: []txnBatch{
				{base: 0, n: 2, pid: 7, txn: true},
				{base: 2, n: 1, pid: 7, txn: true, control: true},
				{base: 3, n: 2, pid: 7, txn: true},
				{base: 5, n: 1, pid: 7, txn: true, control: true},
			},
			aborted:     []coordapi.AbortedTxn{{ProducerID: 7, FirstOffset: 0, LastOffset: 2}},
			acquired:    []coordapi.ShareAcquiredRecords{acq(0, 5, 2)},
			wantKept:    "2-5(2)",
			wantArchive: "0-1",
		},
		{
			// Producer 7: aborted 0-1 (marker 2), committed 3-4 (marker
			// 5), aborted 6-8 (marker 9); the answer split in runs of 4.
			name: "several aborted transactions of one producer",
			batches: []txnBatch{
				{base: 0, n: 2, pid: 7, txn: true},
				{base: 2, n: 1, pid: 7, txn: true, control: true},
				{base: 3, n: 2, pid: 7, txn: true},
				{base: 5, n: 1, pid: 7, txn: true, control: true},
				{base: 6, n: 3, pid: 7, txn: true},
				{base: 9, n: 1, pid: 7, txn: true, control: true},
			},
			aborted: []coordapi.AbortedTxn{
				{ProducerID: 7, FirstOffset: 0, LastOffset: 2},
				{ProducerID: 7, FirstOffset: 6, LastOffset: 9},
			},
			acquired:    []coordapi.ShareAcquiredRecords{acq(0, 3, 1), acq(4, 7, 1), acq(8, 9, 1)},
			wantKept:    "2-3(1) 4-5(1) 9-9(1)",
			wantArchive: "0-1 6-8",
		},
		{
			// Only 3-8 of the aborted batch 2-9 was acquired (the rest
			// went to another member or was acked): only those are
			// archived.
			name: "acquired range partly aborted",
			batches: []txnBatch{
				{base: 0, n: 2, pid: 3},
				{base: 2, n: 8, pid: 7, txn: true},
				{base: 10, n: 2, pid: 3},
			},
			aborted:     []coordapi.AbortedTxn{{ProducerID: 7, FirstOffset: 2, LastOffset: 12}},
			acquired:    []coordapi.ShareAcquiredRecords{acq(1, 1, 3), acq(3, 8, 2), acq(10, 11, 2)},
			wantKept:    "1-1(3) 10-11(2)",
			wantArchive: "3-8",
		},
		{
			name: "a non-transactional batch of an aborting producer id stays",
			batches: []txnBatch{
				{base: 0, n: 2, pid: 7},
				{base: 2, n: 2, pid: 7, txn: true},
			},
			aborted:     []coordapi.AbortedTxn{{ProducerID: 7, FirstOffset: 2, LastOffset: 4}},
			acquired:    []coordapi.ShareAcquiredRecords{acq(0, 3, 1)},
			wantKept:    "0-1(1)",
			wantArchive: "2-3",
		},
		{
			name: "transaction aborted after the batch's marker leaves it",
			batches: []txnBatch{
				{base: 0, n: 2, pid: 7, txn: true},
				{base: 2, n: 1, pid: 7, txn: true, control: true},
				{base: 3, n: 2, pid: 7, txn: true},
			},
			aborted:     []coordapi.AbortedTxn{{ProducerID: 7, FirstOffset: 3, LastOffset: 5}},
			acquired:    []coordapi.ShareAcquiredRecords{acq(0, 4, 1)},
			wantKept:    "0-2(1)",
			wantArchive: "3-4",
		},
		{
			name:        "nothing aborted here",
			batches:     []txnBatch{{base: 0, n: 4, pid: 7, txn: true}},
			aborted:     []coordapi.AbortedTxn{{ProducerID: 8, FirstOffset: 0, LastOffset: 6}},
			acquired:    []coordapi.ShareAcquiredRecords{acq(0, 3, 1)},
			wantKept:    "0-3(1)",
			wantArchive: "",
		},
		{
			name:        "everything aborted",
			batches:     []txnBatch{{base: 4, n: 4, pid: 7, txn: true}},
			aborted:     []coordapi.AbortedTxn{{ProducerID: 7, FirstOffset: 4, LastOffset: 8}},
			acquired:    []coordapi.ShareAcquiredRecords{acq(4, 5, 1), acq(6, 7, 1)},
			wantKept:    "",
			wantArchive: "4-7",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kept, archive := filterAborted(batchBytes(t, tc.batches), tc.aborted, tc.acquired)
			if got := acquiredString(kept); got != tc.wantKept {
				t.Errorf("kept %q, want %q", got, tc.wantKept)
			}
			if got := archiveString(t, archive); got != tc.wantArchive {
				t.Errorf("archived %q, want %q", got, tc.wantArchive)
			}
		})
	}
}

// TestTrimUnread: acquired records past the last batch read go back to
// the coordinator unread, never out to a client as gaps; offsets missing
// between batches (the log's own gaps) stay acquired.
func TestTrimUnread(t *testing.T) {
	acq := func(rs ...[2]int64) []coordapi.ShareAcquiredRecords {
		var out []coordapi.ShareAcquiredRecords
		for _, r := range rs {
			out = append(out, coordapi.ShareAcquiredRecords{First: r[0], Last: r[1], DeliveryCount: 1})
		}
		return out
	}
	for _, tc := range []struct {
		name     string
		batches  []txnBatch
		acquired []coordapi.ShareAcquiredRecords
		kept     string
		unread   [][2]int64
	}{
		{name: "all read", batches: []txnBatch{{base: 0, n: 5}, {base: 5, n: 5}}, acquired: acq([2]int64{0, 9}), kept: "0-9(1)"},
		{name: "a gap between batches stays", batches: []txnBatch{{base: 0, n: 3}, {base: 7, n: 3}}, acquired: acq([2]int64{0, 9}), kept: "0-9(1)"},
		{name: "the read stopped inside a run", batches: []txnBatch{{base: 0, n: 4}}, acquired: acq([2]int64{0, 9}),
			kept: "0-3(1)", unread: [][2]int64{{4, 9}}},
		{name: "whole runs past the read", batches: []txnBatch{{base: 10, n: 5}}, acquired: acq([2]int64{10, 14}, [2]int64{20, 29}, [2]int64{40, 41}),
			kept: "10-14(1)", unread: [][2]int64{{20, 29}, {40, 41}}},
		{name: "nothing read", acquired: acq([2]int64{3, 5}), unread: [][2]int64{{3, 5}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kept, unread := trimUnread(batchBytes(t, tc.batches), tc.acquired)
			if got := acquiredString(kept); got != tc.kept {
				t.Errorf("kept %q, want %q", got, tc.kept)
			}
			var got [][2]int64
			for _, u := range unread {
				if !slices.Equal(u.Types, []int8{coordapi.ShareAckReturnUnread}) {
					t.Errorf("unread %d-%d with types %v", u.First, u.Last, u.Types)
				}
				got = append(got, [2]int64{u.First, u.Last})
			}
			if !slices.Equal(got, tc.unread) {
				t.Errorf("unread %v, want %v", got, tc.unread)
			}
		})
	}
}
