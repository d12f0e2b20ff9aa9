package tierplan

import (
	"strings"
	"testing"

	"github.com/floe-io/floe/coordapi"
)

// TestCheckConsolidation: a report must cover the job's offsets and bytes
// with a segment larger than its data.
func TestCheckConsolidation(t *testing.T) {
	job := &Job{}
	job.ID, job.BaseOffset, job.LastOffset, job.Seg.DataLength = 1, 10, 19, 100
	ok := coordapi.CompleteTierJobRequest{BaseOffset: 10, LastOffset: 19, DataLength: 100, ObjectKey: "s", ObjectSize: 150}
	for _, tc := range []struct {
		name string
		edit func(*coordapi.CompleteTierJobRequest)
		want string // in the error; "" none
	}{
		{"matches", func(*coordapi.CompleteTierJobRequest) {}, ""},
		{"offsets", func(r *coordapi.CompleteTierJobRequest) { r.LastOffset = 18 }, "covers offsets 10-19, not 10-18"},
		{"bytes", func(r *coordapi.CompleteTierJobRequest) { r.DataLength = 99 }, "batches are 100 bytes"},
		{"no key", func(r *coordapi.CompleteTierJobRequest) { r.ObjectKey = "" }, "cannot hold"},
		{"no indexes", func(r *coordapi.CompleteTierJobRequest) { r.ObjectSize = 100 }, "cannot hold"},
	} {
		req := ok
		tc.edit(&req)
		checkErr(t, tc.name, CheckConsolidation(job, &req), tc.want)
	}
}

// TestCheckCompaction: a report replaces a prefix of the inputs with
// output segments that follow each other over the same offsets, of
// unknown keys, cleaned through an offset of its last replaced input.
func TestCheckCompaction(t *testing.T) {
	job := &Job{}
	job.ID, job.Kind, job.BaseOffset, job.LastOffset = 1, coordapi.TierJobCompact, 0, 29
	job.Compact = &coordapi.CompactJob{DirtyOffset: 10, Segments: []coordapi.BatchCoord{
		{BaseOffset: 0, LastOffset: 9}, {BaseOffset: 10, LastOffset: 19}, {BaseOffset: 20, LastOffset: 29}}}
	out := func(base, last int64, key string) coordapi.CompactedSegment {
		return coordapi.CompactedSegment{BaseOffset: base, LastOffset: last, ObjectKey: key, DataLength: 10, ObjectSize: 20, Batches: 1}
	}
	report := func(last, cleaned int64, segs ...coordapi.CompactedSegment) coordapi.CompleteTierJobRequest {
		return coordapi.CompleteTierJobRequest{BaseOffset: 0, LastOffset: last, Compacted: &coordapi.CompactResult{CleanedThrough: cleaned, Segments: segs}}
	}
	known := func(key string) bool { return key == "old" }
	for _, tc := range []struct {
		name  string
		req   coordapi.CompleteTierJobRequest
		job   *Job
		wantN int
		want  string
	}{
		{"all replaced", report(29, 29, out(0, 14, "a"), out(15, 29, "b")), job, 3, ""},
		{"a prefix", report(19, 15, out(0, 19, "a")), job, 2, ""},
		{"not a compaction job", report(29, 29, out(0, 29, "a")), &Job{}, 0, "not a compaction job"},
		{"not at an input's end", report(25, 25, out(0, 25, "a")), job, 0, "do not end at offset 25"},
		{"no segment", report(29, 29), job, 0, "reports no segment"},
		{"cleaned short", report(29, 19, out(0, 29, "a")), job, 0, "cleaned through 19"},
		{"a gap", report(29, 29, out(0, 14, "a"), out(16, 29, "b")), job, 0, "covers 16-29, not from 15"},
		{"no indexes", report(29, 29, coordapi.CompactedSegment{LastOffset: 29, ObjectKey: "a", DataLength: 10, ObjectSize: 10, Batches: 1}), job, 0, "cannot hold"},
		{"too many batches", report(29, 29, coordapi.CompactedSegment{LastOffset: 29, ObjectKey: "a", DataLength: 10, ObjectSize: 20, Batches: 31}), job, 0, "has 31 batches"},
		{"a known key", report(29, 29, out(0, 29, "old")), job, 0, `object "old" is already known`},
		{"short of the end", report(29, 29, out(0, 20, "a")), job, 0, "end at 20, not 29"},
	} {
		n, err := CheckCompaction(tc.job, &tc.req, known)
		checkErr(t, tc.name, err, tc.want)
		if err == nil && n != tc.wantN {
			t.Errorf("%s: %d replaced, want %d", tc.name, n, tc.wantN)
		}
	}
}

// TestCheckTable: each of the job's partitions reported is covered at
// least to its range's end; others are not the job's to check.
func TestCheckTable(t *testing.T) {
	job := &Job{}
	job.ID, job.Kind = 1, coordapi.TierJobTable
	job.Table = &coordapi.TableJob{TopicName: "t", Ranges: []coordapi.TableRange{{Partition: 0, From: 0, To: 5}, {Partition: 2, From: 3, To: 9}}}
	for _, tc := range []struct {
		name    string
		job     *Job
		covered []coordapi.TableCovered
		nilRes  bool
		want    string
	}{
		{"covered", job, []coordapi.TableCovered{{Partition: 0, Next: 5}, {Partition: 2, Next: 10}}, false, ""},
		{"another partition", job, []coordapi.TableCovered{{Partition: 1, Next: 0}}, false, ""},
		{"short", job, []coordapi.TableCovered{{Partition: 2, Next: 8}}, false, "covers t/2 to 8, short of its range's end 9"},
		{"no result", job, nil, true, "go together"},
		{"not a table job", &Job{}, nil, false, "go together"},
	} {
		req := coordapi.CompleteTierJobRequest{Table: &coordapi.TableResult{Covered: tc.covered}}
		if tc.nilRes {
			req.Table = nil
		}
		checkErr(t, tc.name, CheckTable(tc.job, &req), tc.want)
	}
}

func checkErr(t *testing.T, name string, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Errorf("%s: %v", name, err)
	case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
		t.Errorf("%s: error %v, want one saying %q", name, err, want)
	}
}
